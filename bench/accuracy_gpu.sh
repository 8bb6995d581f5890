#!/usr/bin/env bash
# Issue #65 on the GPU machine, one command: builds aiflame_bench_kernels there with nvcc (the repo
# travels, no CUDA compiler here), runs bench/accuracy.sh at ROUNDS (300) over every split mode with
# the aiflame in .dist, and leaves each mode's recorded profile, log, folded output and summary in
# $OUT (small: --no-cubins; candidates for tests/data fixtures). Exit status: accuracy.sh's.
# Usage: OUT=dir bench/accuracy_gpu.sh [ROUNDS=300] [MODE...]
set -u
out=${OUT:-/tmp/accuracy}
mkdir -p "$out"
rounds=${1:-300}
shift || true
nvcc -O2 -std=c++17 -arch=sm_90 -lineinfo -Xcompiler=-fno-omit-frame-pointer bench/workloads/bench_kernels.cu \
  -o "$out/aiflame_bench_kernels" || { echo "accuracy_gpu: nvcc failed"; exit 3; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log -1 --format='commit %h %cd' 2>/dev/null
BENCH_KERNELS="$out/aiflame_bench_kernels" OUT="$out" RECORD_OPTS="--no-cubins ${RECORD_OPTS:-}" \
  bash bench/accuracy.sh "$rounds" "$@"
status=$?
rm -f "$out/aiflame_bench_kernels"
ls -la "$out"
exit $status
