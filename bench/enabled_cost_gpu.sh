#!/usr/bin/env bash
# Issue #24, seventh session, on the GPU machine: the GPU-side cost of PC sampling enabled but stopped
# (bench/probes/enabled_gpu_cost.cu, built here with nvcc), then hf_gpt2.py under plain, today's
# default, the floor (floor-ser) and keep1, alternating (bench/windows_eval.sh).
# Usage: bench/enabled_cost_gpu.sh [ROUNDS=4]   Env: OUT (/tmp/enabled)
set -u
out=${OUT:-/tmp/enabled}
mkdir -p "$out"
cupti_lib=$(dirname "$(find / -name 'libcupti.so*' -not -path '*/proc/*' 2>/dev/null | grep -v python | head -1)")
cupti_inc=$(dirname "$(find / -name cupti.h -not -path '*/proc/*' 2>/dev/null | grep -v python | head -1)")
echo "CUPTI: $cupti_lib $cupti_inc"
nvcc -O2 -arch=sm_90 -I"$cupti_inc" bench/probes/enabled_gpu_cost.cu -o "$out/egc" -L"$cupti_lib" -Xlinker -rpath="$cupti_lib" -lcupti -lcuda &&
  timeout -k 5 120 "$out/egc" 2000
PERIOD=default HF_STEPS=60 SKIP_ACCURACY=1 VARIANTS="plain default floor-ser keep1" RUN_TIMEOUT=100 OUT=$out/hf \
  bash bench/windows_eval.sh "${1:-4}" hf
