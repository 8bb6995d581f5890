#!/usr/bin/env bash
# Issue #22, thirty-fifth session: how many of the thread's last launches predict the next launch's walk
# memo (AIFLAME_MEMO_HISTORY, 0 to 4). Per workload and value, a 30-step run with AIFLAME_VERIFY_MEMOS=1:
# its line counts the launches that took their memo by the Python fingerprint (the capture's fast path,
# which checks the predicted memo first) and checks each against a full walk. Then the default lengths
# with the product's defaults, values 2, 0 and 4 in turn: the summary's figure and its launches from a memo.
# Usage: bench/history_sweep_gpu.sh   Env: B (.dist), WORKLOADS, VALUES (0 1 2 3 4), FIGURE_VALUES (2 0 4)
set -u
b=${B:-.dist}
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  for k in ${VALUES:-0 1 2 3 4}; do
    log=$(AIFLAME_MEMO_HISTORY=$k STEPS=30 AIFLAME_VERIFY_MEMOS=1 timeout -k 5 200 "$b/aiflame" record -f \
          --sass-timeout 0 -o /tmp/v.aiflame -- python3 "bench/workloads/$w.py" 2>&1)
    echo "$w history=$k verify: $(grep -o 'memo check: .*' <<<"$log")"
  done
done
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  for k in ${FIGURE_VALUES:-2 0 4}; do
    log=$(AIFLAME_MEMO_HISTORY=$k timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/d.aiflame -- \
          python3 "bench/workloads/$w.py" 2>&1)
    echo "$w history=$k defaults: $(grep -o 'stack capture cost [0-9.]* us' <<<"$log"); $(grep -o 'the other launches [0-9.]* us' <<<"$log"); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1)"
  done
done
