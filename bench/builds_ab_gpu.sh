#!/usr/bin/env bash
# Two builds of aiflame alternated on one machine, each workload at its default length (as issue #22
# measures), the summary's "stack capture cost" and the slowest launches per run.
# Usage: bench/builds_ab_gpu.sh [ROUNDS=2]   Env: A (.dist), B (.dist/old), WORKLOADS, SETTINGS (the runs'
# environment; AIFLAME_CAPTURE_PROBE=3 unless set: SETTINGS= for the product's defaults)
set -u
a=${A:-.dist}
b=${B:-.dist/old}
for r in $(seq 1 "${1:-2}"); do
  order="$a $b"
  [ $((r % 2)) = 0 ] && order="$b $a"
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    for bin in $order; do
      log=$(env ${SETTINGS-AIFLAME_CAPTURE_PROBE=3} timeout -k 5 300 "$bin/aiflame" record -f --sass-timeout 0 -o /tmp/ab.aiflame -- \
            python3 "bench/workloads/$w.py" 2>&1)
      echo "$w round $r $bin: $(grep -o 'stack capture cost [0-9.]* us' <<<"$log"); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1); $(grep -o 'launches walked: [0-9]* launches, mean [0-9.]* us' <<<"$log"); $(grep -o 'the slowest launches: [0-9.]* us[^;]*' <<<"$log")"
    done
  done
done
