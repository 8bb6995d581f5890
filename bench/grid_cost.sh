#!/usr/bin/env bash
# The per-kernel cost of continuous PC sampling against the kernel's grid: `aiflame_bench_kernels grid
# B N` (kernel `work`, B blocks of 256 threads, N launches on one stream) plain, recorded at the
# defaults and recorded with --no-pc-sampling, round-robin. Prints the median microseconds per kernel.
# Usage: bench/grid_cost.sh [ROUNDS=3] [N=20000] [BLOCKS...=1 8 32 132 264 1024]
# Env:   AIFLAME_BIN (default .dist), OUT (default /tmp/grid), STREAM=own (a non-blocking stream of the
#        program's own instead of the default stream)
set -u
rounds=${1:-3}
n=${2:-20000}
shift 2 || shift $#
sizes=${*:-1 8 32 132 264 1024}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp/grid}
mkdir -p "$out"
rm -f "$out"/*.us
for ((r = 0; r < rounds; r++)); do
  for b in $sizes; do
    "$bin/aiflame_bench_kernels" grid "$b" "$n" ${STREAM:-default} | grep -o 'us_per_kernel [0-9.]*' | awk '{print $2}' >>"$out/plain_$b.us"
    "$bin/aiflame" record -q --force --sass-timeout 0 -o "$out/g.aiflame" -- "$bin/aiflame_bench_kernels" grid "$b" "$n" ${STREAM:-default} |
      grep -o 'us_per_kernel [0-9.]*' | awk '{print $2}' >>"$out/rec_$b.us"
    "$bin/aiflame" record -q --force --sass-timeout 0 --no-pc-sampling -o "$out/g.aiflame" -- "$bin/aiflame_bench_kernels" grid "$b" "$n" ${STREAM:-default} |
      grep -o 'us_per_kernel [0-9.]*' | awk '{print $2}' >>"$out/nopc_$b.us"
  done
done
# shellcheck source=bench/stats.sh
source "$(dirname "$0")/stats.sh"
echo "grid cost: kernel work, $n launches on one stream (${STREAM:-default}), $rounds rounds; median us per kernel"
echo "| blocks | plain | recorded (defaults) | ratio | recorded --no-pc-sampling | ratio |"
echo "|---|---|---|---|---|---|"
for b in $sizes; do
  p=$(median <"$out/plain_$b.us"); r=$(median <"$out/rec_$b.us"); q=$(median <"$out/nopc_$b.us")
  awk -v b="$b" -v p="$p" -v r="$r" -v q="$q" 'BEGIN {printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", b, p, r, r / p, q, q / p}'
done
