#!/usr/bin/env bash
# Issue 70's budgets for one workload on the GPU machine, inside one call:
#   bench/duty_check.sh WORKLOAD.py PLAIN_STEPS [DUTY...]
# A plain run of PLAIN_STEPS steps (its median step time sizes the others); one duty-cycled run per
# DUTY (default "on") of RUN_S seconds (default 185: the issue asks for at least 3 minutes); and
# today's default recording (continuous, CUPTI on all the time) for PLAIN_STEPS steps, the in-run
# reference. Each run prints every step's end (STEP_TIMES=1); bench/duty_steps.py turns them and the
# window log into the figures. Binaries: $AIFLAME (default .devcarry/aiflame, libaiflame_cupti.so
# beside it). Everything goes to $DUTY_OUT (default /tmp/duty_check).
set -u
W=$1 PLAIN_STEPS=$2
shift 2
DUTIES=("$@")
[ ${#DUTIES[@]} -eq 0 ] && DUTIES=(on)
AIFLAME=${AIFLAME:-.devcarry/aiflame}
D=${DUTY_OUT:-/tmp/duty_check}
RUN_S=${RUN_S:-185}
mkdir -p "$D"
export PYTHONUNBUFFERED=1 STEP_TIMES=1
name=$(basename "$W" .py)
here=$(dirname "$0")
echo "== $name: plain, $PLAIN_STEPS steps ($(date -u +%H:%M:%S))"
STEPS=$PLAIN_STEPS python3 "$W" >"$D/$name.plain" 2>"$D/$name.plain.err" || { tail -5 "$D/$name.plain.err"; exit 1; }
step_ms=$(python3 -c "
import statistics,sys
t=[int(x) for x in open('$D/$name.plain').read().split('step_end_ns ')[1].split()]
print(statistics.median([(b-a)/1e6 for a,b in zip(t,t[1:])]))")
steps=$(python3 -c "print(int($RUN_S*1000/$step_ms))")
echo "plain median step $step_ms ms; duty-cycled runs of $steps steps"
for duty in "${DUTIES[@]}"; do
  tag=${duty//\//_}
  echo "== $name: record --duty $duty, $steps steps ($(date -u +%H:%M:%S))"
  rm -rf "$D/$name.$tag.dir"
  STEPS=$steps "$AIFLAME" record --duty "$duty" --sass-timeout 20 -o "$D/$name.$tag.dir" -- python3 "$W" \
    >"$D/$name.$tag.out" 2>"$D/$name.$tag.err"
  echo "exit $?"; grep '^aiflame:' "$D/$name.$tag.err" | tail -8
  log=$(ls "$D/$name.$tag.dir"/windows.*.log | head -1)
  python3 "$here/duty_steps.py" "$D/$name.$tag.out" "$log" --plain "$D/$name.plain"
  "$AIFLAME" report "$D/$name.$tag.dir" -o "$D/$name.$tag.folded" 2>"$D/$name.$tag.report.err"
  echo "report DIR: exit $?, $(awk '{s+=$NF} END {print s}' "$D/$name.$tag.folded") samples in $(wc -l <"$D/$name.$tag.folded") stacks; $(grep -c 'py::' "$D/$name.$tag.folded") with Python frames"
  "$AIFLAME" report "$D/$name.$tag.dir" -o "$D/$name.$tag.heatmap.svg" 2>/dev/null
  echo "heatmap: $(grep -c unrecorded "$D/$name.$tag.heatmap.svg") unrecorded columns"
done
if [ -z "${NO_CONTINUOUS:-}" ]; then
  echo "== $name: record (today's default, continuous), $PLAIN_STEPS steps ($(date -u +%H:%M:%S))"
  STEPS=$PLAIN_STEPS "$AIFLAME" record --sass-timeout 0 -o "$D/$name.cont.data" -- python3 "$W" >"$D/$name.cont.out" 2>"$D/$name.cont.err"
  echo "exit $?"
  python3 "$here/duty_steps.py" "$D/$name.cont.out" --plain "$D/$name.plain"
fi
