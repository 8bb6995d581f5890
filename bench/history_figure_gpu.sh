#!/usr/bin/env bash
# Issue #22, thirty-fifth session: the summary's figure at the default lengths with the product's
# defaults (AIFLAME_MEMO_HISTORY=4) and without the launches' history (0), alternating per workload
# (defaults first in odd rounds); then one run each with AIFLAME_CAPTURE_PROBE=3 (the launch histograms:
# memo launches that took the predicted memo and those that searched, the walked ones, the slowest).
# Usage: bench/history_figure_gpu.sh [ROUNDS=1]   Env: B (.dist), WORKLOADS, PROBE (1)
set -u
b=${B:-.dist}
source "$(dirname "$0")/recorded_run.sh"
run() { RUN_LINES='launch histogram: on_launch|slowest' recorded_run "$@"; }
for r in $(seq 1 "${1:-1}"); do
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    if (( r % 2 )); then order="4 0"; else order="0 4"; fi
    for v in $order; do run "round $r history=$v" AIFLAME_MEMO_HISTORY=$v; done
  done
done
if [[ ${PROBE:-1} == 1 ]]; then
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do run "probe" AIFLAME_CAPTURE_PROBE=3; done
fi
