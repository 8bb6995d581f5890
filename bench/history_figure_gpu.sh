#!/usr/bin/env bash
# Issue #22, thirty-fifth session: the summary's figure at the default lengths with the product's
# defaults (AIFLAME_MEMO_HISTORY=4) and without the launches' history (0), alternating per workload
# (defaults first in odd rounds); then one run each with AIFLAME_CAPTURE_PROBE=3 (the launch histograms:
# memo launches that took the predicted memo and those that searched, the walked ones, the slowest).
# Usage: bench/history_figure_gpu.sh [ROUNDS=1]   Env: B (.dist), WORKLOADS, PROBE (1)
set -u
b=${B:-.dist}
run() {  # run LABEL ENV...
  local label=$1; shift
  local log
  log=$(env "$@" timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/f.aiflame -- \
        python3 "bench/workloads/$w.py" 2>&1)
  echo "$w $label: $(grep -o 'stack capture cost [0-9.]* us' <<<"$log"); $(grep -o '[0-9]* launches ([0-9.]*%) had no memo' <<<"$log"), $(grep -o '[0-9.]* us each ([0-9.]* us of the figure)' <<<"$log"); $(grep -o 'the other launches [0-9.]* us' <<<"$log"); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1)"
  grep -E 'launch histogram: on_launch|slowest' <<<"$log" | cut -c1-400 | sed 's/^/  /'
}
for r in $(seq 1 "${1:-1}"); do
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    if (( r % 2 )); then order="4 0"; else order="0 4"; fi
    for v in $order; do run "round $r history=$v" AIFLAME_MEMO_HISTORY=$v; done
  done
done
if [[ ${PROBE:-1} == 1 ]]; then
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do run "probe" AIFLAME_CAPTURE_PROBE=3; done
fi
