#!/usr/bin/env bash
# The launch path's wall-time cost per launch, measured inside each run (AIFLAME_LAB=launch_ab,
# src/record/measure/launch_ab.h), against the launch path's own timer, on the GPU machine. Variants:
#   default   the default recording
#   nocapture --unwind off --no-python: the launch record and the autograd tracking without a stack
#   cbonly    --no-pc-sampling with AIFLAME_ACTIVITY=0: the launch path alone, no CUPTI sampling or records
# Usage: bench/launch_ab_gpu.sh [ROUNDS=2]
# Env:   AIFLAME_BIN (.dist), WORKLOADS ("gpt_train hf_gpt2 resnet_train"), VARIANTS ("default nocapture"),
#        STEPS_<workload> (gpt_train 100, resnet_train 40, others 60), OUT (a temporary directory)
set -u
rounds=${1:-2}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for w in ${WORKLOADS:-gpt_train hf_gpt2 resnet_train}; do
    steps_var="STEPS_$w"
    steps=${!steps_var:-}
    [ -z "$steps" ] && case $w in gpt_train) steps=100 ;; resnet_train) steps=40 ;; *) steps=60 ;; esac
    for v in ${VARIANTS:-default nocapture}; do
      opts=() envs=(AIFLAME_LAB=launch_ab)
      case $v in
        nocapture) opts=(--unwind off --no-python) ;;
        cbonly) opts=(--no-pc-sampling) envs+=(AIFLAME_ACTIVITY=0) ;;
      esac
      log=$(env "${envs[@]}" timeout -k 5 150 "$bin/aiflame" record -f --sass-timeout 0 "${opts[@]}" -o "$out/ab.aiflame" -- \
              env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
      echo "$w $v r$r $(grep -o 'loop_s [0-9.]*' <<<"$log") $(grep -o 'launch A/B: .*' <<<"$log")"
    done
  done
done
