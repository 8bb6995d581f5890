#!/usr/bin/env bash
# The incremental native walk on the GPU machine (issue #22): each training loop recorded ROUNDS
# times with the incremental walk (the default) and ROUNDS times with every native frame walked
# (AIFLAME_FULL_UNWIND=1), alternating (on, off; off, on; ...) so that both see the same host, with
# AIFLAME_CAPTURE_STATS=1: one breakdown line per run (us per launch by part, native frames, how many
# of them were reused from the thread's previous walk). Then, per workload and setting, the medians
# of the total and of the native unwind part.
#
# Usage: bench/incremental_unwind_gpu.sh [ROUNDS=2]
# Env:   AIFLAME_BIN (directory with aiflame and libaiflame_cupti.so; default .dist), STEPS (100).
# Run from the repository root on a machine with a GPU, CUDA and PyTorch (transformers and
# torchvision for hf_gpt2.py and resnet_train.py).
set -u
rounds=${1:-2}
bin=${AIFLAME_BIN:-.dist}
steps=${STEPS:-100}
out=$(mktemp -d)
for w in gpt_train hf_gpt2 resnet_train; do
  for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then order="0 1"; else order="1 0"; fi
    for full in $order; do
      line=$(AIFLAME_FULL_UNWIND=$full AIFLAME_CAPTURE_STATS=1 "$bin/aiflame" record -f --sass-timeout 0 \
               -o "$out/x.aiflame" -- env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1 | grep 'capture stats')
      echo "$w full_unwind=$full: ${line:-(no capture stats line)}" | tee -a "$out/lines"
    done
  done
done
python3 - "$out/lines" <<'PY'
import re, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) full_unwind=(\d): .*total ([0-9.]+) .*native unwind ([0-9.]+)", l)
    if m:
        runs.setdefault((m[1], m[2]), []).append((float(m[3]), float(m[4])))
for (w, full), v in sorted(runs.items()):
    tot, unw = zip(*v)
    print("%-13s %-22s total %.3f (%.3f-%.3f), native unwind %.3f (%.3f-%.3f) us per launch, %d runs" % (
        w, "every frame walked" if full == "1" else "incremental", statistics.median(tot), min(tot), max(tot),
        statistics.median(unw), min(unw), max(unw), len(v)))
PY
rm -rf "$out"
