#!/usr/bin/env bash
# Issue #22: the development machine's capture benchmark (bench/capture, hot: BM_CaptureEveryLaunch)
# run on the GPU machine's CPU, two builds alternating, each pinned to one CPU: what the launch
# path's instructions cost that host with its caches warm. The benchmark libraries are built on the
# development machine and carried with Debian's libbenchmark (the GPU machine has none).
# Usage: bench/capture_hot_gpu.sh [ROUNDS=4]   Env: A (.dist/old/bench), B (.dist/bench), CPU (3)
set -u
a=${A:-.dist/old/bench} b=${B:-.dist/bench}
export LD_LIBRARY_PATH=$PWD/.dist/bench
for ((r = 0; r < ${1:-4}; r++)); do
  for x in A B; do
    [ $((r % 2)) = 1 ] && x=$([ $x = A ] && echo B || echo A)
    lib=$a; [ $x = B ] && lib=$b
    echo "$x $(taskset -c "${CPU:-3}" python3 bench/capture/capture_bench.py "$lib/libaiflame_capture_bench.so" \
      --benchmark_filter='BM_CaptureEveryLaunch' 2>&1 | grep -o 'per-launch capture: median [0-9.]* us, p99 [0-9.]* us')"
  done
done
