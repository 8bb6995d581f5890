#!/usr/bin/env bash
# Reliability checks on the GPU machine: the profiled program is never hurt and what aiflame saw is
# never lost. Prints one PASS/FAIL line per check and the figures for bench/RESULTS.md.
# Usage: OUT=dir bench/reliability.sh [MINUTES_FOR_THE_LONG_RUN=0]
set -u
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
long=${1:-0}
A=$bin/aiflame
R=$bin/aiflame_reliability
export PYTHONUNBUFFERED=1
pass=0; fail=0
check() { if eval "$2"; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); fi; }
field() { grep -o "$1" "$2" | head -1 | grep -o '[0-9]*' | head -1; }
t=$(mktemp -d)

if [ "${ONLY_LONG:-0}" = 0 ]; then
# 32 host threads launching on 16 streams each for 10 s.
$A record --force -o $t/stress.aiflame -- $R stress 32 16 10 >$t/stress.out 2>$t/stress.err
rc=$?
cat $t/stress.out $t/stress.err | grep -E "launched|GPU samples|attributed|capture cost|program ran"
launched=$(field 'launched [0-9]*' $t/stress.out)
launches=$(grep -o '[0-9]* launches' $t/stress.err | head -1 | grep -o '[0-9]*')
kernels=$(grep -o '[0-9]* kernels on' $t/stress.err | head -1 | grep -o '[0-9]*')
check "stress: exit 0" '[ $rc -eq 0 ]'
check "stress: launches recorded ($launches) = launched ($launched)" '[ "$launches" = "$launched" ]'
check "stress: kernel records ($kernels) = launches ($launches)" '[ "$kernels" = "$launches" ]'
check "stress: no warning" '! grep -q "aiflame: recorded warning" $t/stress.err'

for mode in segv abort; do
  $A record --force -o $t/$mode.aiflame -- $R $mode 300 >$t/$mode.out 2>$t/$mode.err
  rc=$?
  want=$([ $mode = segv ] && echo 139 || echo 134)
  check "$mode: exit status $want passed through (got $rc)" '[ $rc -eq $want ]'
  $A report $t/$mode.aiflame -o $t/$mode.folded 2>$t/$mode.rep
  check "$mode: profile readable" '[ $? -eq 0 ] && [ -s $t/$mode.folded ]'
  check "$mode: report says cut short" 'grep -q "cut short" $t/$mode.rep'
  # The crash report (on at every recording) names the program's own code.
  # Its line: "aiflame: signal 11 (code 1) at
  # address 0x..., pc 0x... (object+offset), in the program (not aiflame)".
  if [ $mode = segv ]; then
    check "segv: the crash report names the program, not aiflame" \
      'grep -q "aiflame: signal 11 (code -\?[0-9]*) at address .* in the program (not aiflame)" $t/$mode.err'
    grep -h "aiflame: signal" $t/$mode.err | head -2
  fi
  grep -h "GPU samples" $t/$mode.rep | head -1
done

$A record --force -o $t/fork.aiflame -- $R fork 100 >$t/fork.out 2>$t/fork.err
rc=$?
check "fork: exit 0" '[ $rc -eq 0 ]'
check "fork: one profile, complete" '[ -s $t/fork.aiflame ] && ! grep -q "cut short" $t/fork.err && [ "$(ls $t/fork.aiflame.* 2>/dev/null | wc -l)" = 0 ]'
check "fork: both phases recorded (200 launches)" 'grep -q " 200 launches" $t/fork.err'

$A record --force -o $t/exec.aiflame -- $R exec 50 >$t/exec.out 2>$t/exec.err
rc=$?
files=$(ls $t/exec.aiflame.* 2>/dev/null | wc -l)
check "exec: exit 0" '[ $rc -eq 0 ]'
check "exec: one profile per CUDA process ($files)" '[ "$files" = 2 ]'
# Parent and child share one GPU, which CUPTI samples for one process at a time: the parent samples,
# the child says so and records its 50 launches and kernels without samples.
check "exec: each process recorded its 50 kernels" '[ "$(grep -c "  50 kernels, " $t/exec.err)" = 2 ]'
check "exec: the child says its GPU is sampled by its parent" 'grep -q "is already PC-sampled by process" $t/exec.err'
$A report $t/exec.aiflame.* -o $t/exec.folded 2>&1 | grep "GPU samples"
check "exec: merged report has the parent's samples" '[ -s $t/exec.folded ]'

fi
# The injection library's memory over a long run, and the profile's growth on disk.
if [ "$long" != 0 ]; then
  steps=$((long * 60 * 50))  # about 50 steps per second
  STEPS=$steps $A record --force --no-cubins -o $t/long.aiflame -- python3 bench/workloads/gpt_train.py >$t/long.out 2>$t/long.err &
  sleep 15
  pid=$(pgrep -f "^python3 bench/workloads/gpt_train.py" | head -1)
  echo "long run: pid $pid, $steps steps"
  t0=$(date +%s)
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
    size=$(stat -c %s $t/long.aiflame.rec-*.$pid 2>/dev/null | head -1)  # the run-private name while it records (#25)
    echo "t=$(( $(date +%s) - t0 + 15 ))s rss_kb=$rss profile_bytes=$size"
    sleep 15
  done
  wait
  cat $t/long.out; grep -v "^aiflame\[debug" $t/long.err | tail -12
  dmesg 2>/dev/null | grep -i -E "killed process|out of memory" | tail -3
  # The same program without aiflame, for the baseline resident memory.
  STEPS=3000 python3 bench/workloads/gpt_train.py >/dev/null 2>&1 &
  sleep 50
  pid=$(pgrep -f "gpt_train.py" | head -1)
  echo "plain run at 50 s: rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)"
  kill "$pid" 2>/dev/null
  wait
fi
echo "reliability: $pass passed, $fail failed"
