#!/bin/bash
# Side by side, alternating: the cold launch-path benchmarks (capture_probe.cpp: BM_CaptureCold,
# BM_OnLaunchCold, BM_CaptureColdMixed) of two builds of libaiflame_capture_bench.so, ROUNDS rounds of A then B (B then A
# every other round). Prints each run's medians, then per build the median of the run medians with
# their range. Usage: bench/capture/cold_ab.sh A.so B.so [ROUNDS=5]
# MODE=backward: BM_OnLaunchColdBackward instead of BM_OnLaunchCold (launches by an autograd engine
# thread under 400 nodes with forward stacks; its medians in the on_launch columns).
set -eu
A=$1 B=$2 ROUNDS=${3:-5}
if [ "${MODE:-}" = backward ]; then filter='CaptureCold|OnLaunchColdBackward/'; what='backward on_launch'
else filter='CaptureCold|OnLaunchCold/'; what='on_launch'; fi
here=$(dirname "$0")
out=$(mktemp -d)
run() {  # $1 label, $2 lib
  python3 "$here/capture_bench.py" "$2" --benchmark_filter="$filter" 2>/dev/null |
    awk -v l="$1" -v w="cold per-launch $what:" '/^cold per-launch capture/ {c=$5; cp=$8} index($0, w) == 1 {for (k = 1; k < NF; k++) { if ($k == "median") o=$(k+1); if ($k == "p99") op=$(k+1) }}
                   /^cold mixed-path capture/ {m=$5; mp=$8}
                   END {print l, c, cp, o, op, m, mp}' | tr -d ',' >> "$out/runs"
}
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then run A "$A"; run B "$B"; else run B "$B"; run A "$A"; fi
done
echo "build  capture-median capture-p99 on_launch-median on_launch-p99 mixed-median mixed-p99 (us)"
cat "$out/runs"
python3 - "$out/runs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for b in "AB":
    cols = list(zip(*[[float(x) for x in r[1:]] for r in rows if r[0] == b]))
    names = ["capture median", "capture p99", "on_launch median", "on_launch p99", "mixed-path capture median", "mixed-path capture p99"]
    print(b + ": " + "; ".join("%s %.3f (%.3f-%.3f)" % (n, statistics.median(c), min(c), max(c)) for n, c in zip(names, cols)))
PY
rm -rf "$out"
