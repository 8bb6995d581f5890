#!/usr/bin/env bash
# Windows mode (kernel-serialized sampling windows) against continuous mode on the GPU machine:
# attribution accuracy on the 3:1 split program, and overhead on gpt_train.py and the multi-stream
# and launch-storm workloads, each mode in A/B pairs against plain runs.
# Usage: bench/windows_eval.sh [PAIRS=3]   Env: AIFLAME_BIN (default .dist), OUT (default /tmp)
set -u
pairs=${1:-3}
out=${OUT:-/tmp}
mkdir -p "$out"
echo "## accuracy, continuous (default) vs windows"
for opts in "" "--pc-mode windows" "--pc-mode windows --period 20"; do
  echo "### RECORD_OPTS='$opts'"
  RECORD_OPTS="$opts" OUT="$out" bench/accuracy.sh 1000 sequential streams size
done
echo "## overhead, windows mode"
RECORD_OPTS="--pc-mode windows" OUT="$out" bench/overhead.sh "$pairs" gpt threads storm
