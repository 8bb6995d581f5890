#!/usr/bin/env bash
# Issue #22 on the GPU machine: torch's autograd thread-locals read in place (AIFLAME_TORCH_TLS=1, the
# default) against its functions called at every launch (0), alternating in pairs inside one call.
# Per run: the summary's capture cost, the memo launches' histogram line, and the autograd summary line
# (the backward launches placed under backward() and their forward code must not move).
# Usage: bench/torch_tls_ab_gpu.sh [ROUNDS=2]   Env: B (.dist), WORKLOADS, STEPS_<workload>
set -u
b=${B:-.dist}
rounds=${1:-2}
workloads=${WORKLOADS:-hf_gpt2 resnet_train gpt_train}
nvidia-smi --query-gpu=name --format=csv,noheader
# Which reads a run makes, from its debug lines (a short run).
AIFLAME_DEBUG=1 timeout -k 5 200 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/tls.aiflame -- \
  env STEPS=5 python3 bench/workloads/hf_gpt2.py 2>&1 | grep -E "torch's (thread-locals|functions)" | sed 's/^/  /'
for w in $workloads; do
  steps_var="STEPS_$w"
  steps=${!steps_var:-}
  [ -z "$steps" ] && case $w in hf_gpt2) steps=100 ;; resnet_train) steps=60 ;; *) steps=150 ;; esac
  for r in $(seq 1 "$rounds"); do
    order="1 0"
    [ $((r % 2)) = 0 ] && order="0 1"
    for v in $order; do
      log=$(AIFLAME_TORCH_TLS=$v AIFLAME_CAPTURE_PROBE=3 timeout -k 5 200 "$b/aiflame" record -f --sass-timeout 0 \
              -o /tmp/tls.aiflame -- env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
      echo "$w steps=$steps round $r TORCH_TLS=$v: $(grep -o 'stack capture cost [0-9.]* us' <<<"$log" | head -1)"
      grep -E 'launches from their memo:|launches walked:' <<<"$log" | sed 's/aiflame: launch histogram: /  /'
      grep -E 'autograd \(torch' <<<"$log" | sed 's/^/  /'
      grep -q 'stack capture cost' <<<"$log" || { echo "  no summary; the log's end:"; tail -8 <<<"$log" | sed 's/^/    /'; }
    done
  done
done
