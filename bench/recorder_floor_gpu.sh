#!/usr/bin/env bash
# Issue #24, sixth session, on the GPU machine: what keeping PC sampling enabled costs by itself
# (floor-ser, floor-cont), windows of one launch with sampling kept enabled (keep1), today's default
# and PyTorch's profiler with stacks (hf only), against plain, alternating (bench/windows_eval.sh).
# Usage: bench/recorder_floor_gpu.sh [ROUNDS=3]   Env: OUT (default /tmp/floor), AIFLAME_BIN (.dist)
set -u
rounds=${1:-3}
out=${OUT:-/tmp/floor}
mkdir -p "$out"
export PERIOD=${PERIOD:-default} HF_STEPS=${HF_STEPS:-60} RESNET_STEPS=${RESNET_STEPS:-40} SKIP_ACCURACY=1 RUN_TIMEOUT=${RUN_TIMEOUT:-150}
VARIANTS="plain default floor-ser floor-cont keep1 torchprof" OUT=$out bash bench/windows_eval.sh "$rounds" hf
VARIANTS="${FLOOR_VARIANTS:-plain default floor-ser floor-cont keep1}" OUT=$out bash bench/windows_eval.sh "$rounds" resnet gpt
