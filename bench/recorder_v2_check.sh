#!/usr/bin/env bash
# Issue #24 on the GPU machine, default (windows) mode: the 3:1 attribution in every split arrangement
# (bench/accuracy.sh), the demo's three towers, and the loop ratios of the storm, threads and graph
# workloads (bench/windows_eval.sh, alternating pairs). Copies split_thin.aiflame and the logs to $OUT
# (when set) for the fixtures. Usage: bench/recorder_v2_check.sh [ROUNDS=3]
set -u
rounds=${1:-3}
bin=${AIFLAME_BIN:-.dist}
work=/tmp/rv2
mkdir -p "$work"
echo "== accuracy, default mode (bench/accuracy.sh 300)"
OUT=$work TIMEOUT=120 bash bench/accuracy.sh 300 sequential streams size thin
grep -h "windows" "$work"/split_*.log | head -4
echo "== the demo's towers, default mode"
timeout -k 5 120 "$bin/aiflame" record --force --sass-timeout 0 -o "$work/demo.aiflame" -- "$bin/aiflame_demo_matmul" 200 >"$work/demo.log" 2>&1
grep -E "windows|samples" "$work/demo.log" | head -4
"$bin/aiflame" report --plain -q -f "$work/demo.aiflame" -o "$work/demo.folded"
awk '{k=$0; sub(/.*;-;/, "", k); sub(/;.*/, "", k); n[k]+=$NF} END {for (k in n) print "  kernel", k, n[k]}' "$work/demo.folded"
echo "== loop ratios"
RUN_TIMEOUT=60 SKIP_ACCURACY=1 VARIANTS="plain default" OUT=$work/eval bash bench/windows_eval.sh "$rounds" storm threads graph
if [ -n "${OUT:-}" ]; then
  cp "$work"/split_*.log "$work/split_thin.aiflame" "$work/demo.log" "$OUT/" 2>/dev/null
fi
