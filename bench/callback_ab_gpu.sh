#!/usr/bin/env bash
# CUPTI's per-launch costs to a training loop, inside one run (issue #24; record/callback_ab.h): per
# workload and mode, RUNS recordings with AIFLAME_CALLBACK_AB and STEP_TIMES=1, each read by
# bench/callback_ab.py. Modes: default (AIFLAME_CALLBACK_AB=1 at the defaults: continuous PC sampling
# and kernel records on throughout, the A/B sees the launch callback and aiflame's launch path), nopc
# (the same with --no-pc-sampling), records (AIFLAME_CALLBACK_AB=2 with --no-pc-sampling: the kernel
# records switched, the launch callbacks on throughout).
# Usage: bench/callback_ab_gpu.sh [RUNS=2]   Env: WORKLOADS ("hf_gpt2 resnet_train"), MODES ("default nopc"),
#        STEPS (300), AIFLAME_BIN (.dist), OUT (a temporary directory)
set -u
runs=${1:-2}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
for w in ${WORKLOADS:-hf_gpt2 resnet_train}; do
  for r in $(seq 1 "$runs"); do
    for mode in ${MODES:-default nopc}; do
      opts=(); ab=1
      [ "$mode" != default ] && opts=(--no-pc-sampling)
      [ "$mode" = records ] && ab=2
      log=$out/${w}_${mode}_$r.log
      AIFLAME_CALLBACK_AB=$ab timeout -k 5 "${RUN_TIMEOUT:-120}" "$bin/aiflame" record -f --sass-timeout 0 "${opts[@]}" \
        -o "$out/$w.aiflame" -- env STEPS="${STEPS:-300}" STEP_TIMES=1 python3 "bench/workloads/$w.py" >"$log" 2>&1
      echo "$w $mode run $r: exit $? $(grep -o 'loop_s [0-9.]*' "$log")"
      python3 bench/callback_ab.py "$log" "  $w $mode $r"
    done
  done
done
