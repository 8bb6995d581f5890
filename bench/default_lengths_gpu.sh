#!/usr/bin/env bash
# Issue #22 as the issue measures it: gpt_train.py, hf_gpt2.py and resnet_train.py at their default
# lengths (STEPS unset), the summary's "stack capture cost". Per workload: one run with the product's
# defaults (the figure a user sees), then one with AIFLAME_CAPTURE_STATS=1 AIFLAME_CAPTURE_PROBE=3 (the
# breakdown, the walked launches and the slowest launches; their clock reads add to that run's figure).
# Usage: bench/default_lengths_gpu.sh [ROUNDS=1]   Env: B (.dist), WORKLOADS, SETTINGS (extra env for both runs)
set -u
b=${B:-.dist}
for r in $(seq 1 "${1:-1}"); do
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    start=$SECONDS
    log=$(env ${SETTINGS:-} timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/dl.aiflame -- \
          python3 "bench/workloads/$w.py" 2>&1)
    echo "$w round $r defaults ($((SECONDS - start)) s): $(grep -o 'stack capture cost [0-9.]* us' <<<"$log"); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1); $(grep -o '[0-9.]*% of GPU samples attributed' <<<"$log")"
    start=$SECONDS
    log=$(env ${SETTINGS:-} AIFLAME_CAPTURE_STATS=1 AIFLAME_CAPTURE_PROBE=3 timeout -k 5 300 "$b/aiflame" record -f \
          --sass-timeout 0 -o /tmp/dl.aiflame -- python3 "bench/workloads/$w.py" 2>&1)
    echo "$w round $r stats ($((SECONDS - start)) s): $(grep -o 'stack capture cost [0-9.]* us' <<<"$log")"
    grep -E 'capture stats|launches walked:|the slowest launches|from a memo:' <<<"$log" | sed 's/^/  /'
  done
done
