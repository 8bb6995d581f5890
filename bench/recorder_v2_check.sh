#!/usr/bin/env bash
# Issue #24 on the GPU machine, windows mode (--pc-mode windows, experimental): the 3:1 attribution in every split arrangement
# (bench/accuracy.sh), the demo's three towers, the loop ratios of the storm, threads, graph and Triton
# workloads (bench/windows_eval.sh, alternating pairs) and one long gpt_train.py pair (several windows).
# Copies split_thin.aiflame and the logs to $OUT (when set) for the fixtures.
# Usage: bench/recorder_v2_check.sh [ROUNDS=3] [LONG_STEPS=1500]
set -u
rounds=${1:-3}
long=${2:-1500}
bin=${AIFLAME_BIN:-.dist}
work=/tmp/rv2
mkdir -p "$work"
export AIFLAME_EXPERIMENTAL=1
W="--pc-mode windows"
echo "== loop ratios"
RUN_TIMEOUT=60 SKIP_ACCURACY=1 VARIANTS="plain windows" OUT=$work/eval bash bench/windows_eval.sh "$rounds" graph storm threads
RUN_TIMEOUT=90 SKIP_ACCURACY=1 VARIANTS="plain windows" OUT=$work/eval bash bench/windows_eval.sh 2 triton
echo "== accuracy, windows mode (bench/accuracy.sh 300)"
OUT=$work TIMEOUT=120 RECORD_OPTS="$W" bash bench/accuracy.sh 300 sequential streams size thin
echo "== the demo's towers, windows mode"
timeout -k 5 120 "$bin/aiflame" record --force --sass-timeout 0 $W -o "$work/demo.aiflame" -- "$bin/aiflame_demo_matmul" 200 >"$work/demo.log" 2>&1
grep -E "windows|samples|kernels" "$work/demo.log" | head -5
"$bin/aiflame" report --plain -q -f "$work/demo.aiflame" -o "$work/demo.folded"
awk '{k=$0; sub(/.*;-;/, "", k); sub(/;.*/, "", k); n[k]+=$NF} END {for (k in n) print "  kernel", k, n[k]}' "$work/demo.folded"
echo "== long gpt_train.py (STEPS=$long), plain then windows"
env STEPS="$long" timeout 200 python3 bench/workloads/gpt_train.py 2>&1 | grep loop_s
timeout -k 5 200 "$bin/aiflame" record --force --sass-timeout 0 $W -o "$work/long.aiflame" -- env STEPS="$long" python3 bench/workloads/gpt_train.py >"$work/long.log" 2>&1
grep -E "loop_s|windows|samples|kernels|warning" "$work/long.log" | head -8
if [ -n "${OUT:-}" ]; then
  cp "$work"/split_*.log "$work/split_thin.aiflame" "$work/demo.log" "$work/long.log" "$OUT/" 2>/dev/null
fi
