#!/usr/bin/env bash
# Issue #22: where a machine stands, in one device call. The three loops at their default lengths with
# the capture stats (AIFLAME_CAPTURE_STATS=1 AIFLAME_CAPTURE_PROBE=3: the breakdown, the walked launches,
# the slowest launches), then two builds alternated with the product's defaults (bench/builds_ab_gpu.sh).
# Usage: bench/state_gpu.sh [ROUNDS=1]   Env: A (.dist), B (.dist/old), WORKLOADS, STATS_WORKLOADS (the
# stats runs only; WORKLOADS if unset), PROBE2=1 (the phase probe, AIFLAME_CAPTURE_PROBE=2, on A as well)
set -u
a=${A:-.dist}
lscpu | grep -E 'Model name|^CPU\(s\)' | sed 's/^/  /'
for w in ${STATS_WORKLOADS-${WORKLOADS:-hf_gpt2 resnet_train gpt_train}}; do
  log=$(AIFLAME_CAPTURE_STATS=1 AIFLAME_CAPTURE_PROBE=3 timeout -k 5 300 "$a/aiflame" record -f --sass-timeout 0 \
        -o /tmp/st.aiflame -- python3 "bench/workloads/$w.py" 2>&1)
  echo "$w stats ($a): $(grep -o 'stack capture cost [0-9.]* us' <<<"$log")"
  grep -E 'capture stats|launches walked:|the slowest launches|from a memo|predicted by|searched for' <<<"$log" | cut -c1-1500 | sed 's/^/  /'
  if [[ -n ${PROBE2:-} ]]; then
    log=$(AIFLAME_CAPTURE_PROBE=2 timeout -k 5 300 "$a/aiflame" record -f --sass-timeout 0 -o /tmp/st.aiflame -- \
          python3 "bench/workloads/$w.py" 2>&1)
    grep -E 'phase probe' <<<"$log" | sed 's/^/  /'
  fi
done
SETTINGS= bash "$(dirname "$0")/builds_ab_gpu.sh" "${1:-1}"
