#!/usr/bin/env bash
# Overhead of `aiflame record` on the GPU machine: plain and recorded runs alternate (A B A B ...),
# and the table gives the median, min and max of the per-pair ratios of
#   - total wall time (what a user waits for, symbolizing the profile included),
#   - the program's own run time under aiflame (until it exits, before symbolizing),
#   - gpt_train.py's own training-loop time (loop_s), where the workload reports it.
#
# Usage: bench/overhead.sh [PAIRS=5] [WORKLOAD...]   (workloads: demo gpt)
# Env:   AIFLAME_BIN (directory with aiflame, libaiflame_cupti.so, aiflame_demo_matmul; default .dist)
#        RECORD_OPTS (extra options for aiflame record), STEPS (gpt_train.py steps, default 100)
set -u
pairs=${1:-5}
shift || true
workloads=${*:-demo gpt}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
export STEPS=${STEPS:-100} PYTHONUNBUFFERED=1

now() { date +%s.%N; }
calc() { awk "BEGIN{print $1}"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
stats() { printf '%.3f [%.3f, %.3f]' "$(median <"$1")" "$(sort -n "$1" | head -1)" "$(sort -n "$1" | tail -1)"; }

run_one() {  # run_one WORKLOAD MODE -> prints "wall loop program"
  local w=$1 mode=$2 log=$out/run.log cmd
  case $w in
    demo) cmd=("$bin/aiflame_demo_matmul" 200) ;;
    gpt) cmd=(python3 bench/workloads/gpt_train.py) ;;
  esac
  local t0 t1
  t0=$(now)
  if [ "$mode" = plain ]; then
    "${cmd[@]}" >"$log" 2>&1
  else
    # shellcheck disable=SC2086
    "$bin/aiflame" record --force ${RECORD_OPTS:-} -o "$out/bench.aiflame" -- "${cmd[@]}" >"$log" 2>&1
  fi
  t1=$(now)
  local wall loop prog
  wall=$(calc "$t1 - $t0")
  loop=$(grep -o 'loop_s [0-9.]*' "$log" | awk '{print $2}')
  prog=$(grep -o 'the program ran [0-9.]*' "$log" | awk '{print $4}')
  echo "$wall ${loop:-0} ${prog:-$wall}"
}

printf '| workload | pairs | plain s | recorded s (program s) | total wall ratio | program ratio | training-loop ratio |\n'
printf '|---|---|---|---|---|---|---|\n'
for w in $workloads; do
  run_one "$w" plain >/dev/null  # warm caches (files, GPU clocks)
  for f in wall prog loop pw rw rp; do : >"$out/r_$f"; done
  for i in $(seq "$pairs"); do
    read -r pw pl _ < <(run_one "$w" plain)
    read -r rw rl rp < <(run_one "$w" record)
    echo "$pw" >>"$out/r_pw"; echo "$rw" >>"$out/r_rw"; echo "$rp" >>"$out/r_rp"
    calc "$rw / $pw" >>"$out/r_wall"
    calc "$rp / $pw" >>"$out/r_prog"
    if [ "$pl" != 0 ]; then calc "$rl / $pl" >>"$out/r_loop"; fi
    echo "pair $i $w: plain $pw s (loop $pl) recorded $rw s (program $rp s, loop $rl)" >&2
  done
  loopcol=-
  [ -s "$out/r_loop" ] && loopcol=$(stats "$out/r_loop")
  printf '| %s | %s | %.2f | %.2f (%.2f) | %s | %s | %s |\n' "$w" "$pairs" "$(median <"$out/r_pw")" \
    "$(median <"$out/r_rw")" "$(median <"$out/r_rp")" "$(stats "$out/r_wall")" "$(stats "$out/r_prog")" "$loopcol"
done
