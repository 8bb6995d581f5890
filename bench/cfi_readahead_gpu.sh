#!/usr/bin/env bash
# Issue #22 on the GPU machine: a loop's first launches with the page cache cold (dropped before each
# run), the CFI readahead on (AIFLAME_CFI_READAHEAD=1, the default) and off, alternating. Per run: the
# summary's capture cost, the walked launches' histogram line and the slowest launches.
# Usage: bench/cfi_readahead_gpu.sh [ROUNDS=2]   Env: B (.dist), W (hf_gpt2), STEPS (20)
set -u
b=${B:-.dist}
w=${W:-hf_gpt2}
steps=${STEPS:-20}
for r in $(seq 1 "${1:-2}"); do
  order="${VARIANTS:-1 0}"
  [ $((r % 2)) = 0 ] && order=$(echo $order | tr " " "\n" | tac | tr "\n" " ")
  for v in $order; do
    sync
    if ! echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then echo "cannot drop the page cache here"; exit 1; fi
    start=$SECONDS
    log=$(AIFLAME_CFI_READAHEAD=$v AIFLAME_CAPTURE_PROBE=3 timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 \
            -o /tmp/ra.aiflame -- env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
    echo "$w steps=$steps round $r CFI_READAHEAD=$v ($((SECONDS - start)) s): $(grep -o 'stack capture cost [0-9.]* us' <<<"$log")"
    grep -E 'launches walked:|the slowest launches' <<<"$log" | sed 's/aiflame: launch histogram: /  /'
  done
done
