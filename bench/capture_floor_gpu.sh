#!/usr/bin/env bash
# Issue #22 on the GPU machine: how much of a launch's capture is reading the stack at all, and whether
# the capture's prefetch variants help, each measured inside one run.
#  1. bench/probes/cold_lines.c: N lines read cold (a 256-MiB buffer written before each read) and hot,
#     independent and chained: the host's floor for reading N lines.
#  2. Per workload, AIFLAME_CAPTURE_PROBE=1: before each launch, every stack line of its likely memo's
#     check loaded and timed, twice (StackCapture::set_probe_lines): what reading the stack alone costs
#     a launch of that loop, in place.
#  3. Per workload and each mask in ABS, AIFLAME_CAPTURE_AB=mask: the variants on and off in random
#     6-8 ms slices of one run (Recorder::capture_ab); the line gives both kinds' capture cost of the
#     launches that took their memo, and the difference in each half of the slices.
# Usage: bench/capture_floor_gpu.sh   Env: B (.dist), WORKLOADS ("hf_gpt2 resnet_train gpt_train"),
#        ABS ("3"), PROBE (1), FLOOR (1), STEPS_<workload> (hf_gpt2 60, resnet_train 40, others 100)
set -u
b=${B:-.dist}
workloads=${WORKLOADS:-hf_gpt2 resnet_train gpt_train}
nvidia-smi --query-gpu=name --format=csv,noheader
if [ "${FLOOR:-1}" = 1 ]; then
  gcc -O2 -o /tmp/cold_lines bench/probes/cold_lines.c && /tmp/cold_lines
fi
run() {  # workload, then env assignments
  local w=$1 steps_var steps log
  shift
  steps_var="STEPS_$w"
  steps=${!steps_var:-}
  [ -z "$steps" ] && case $w in hf_gpt2) steps=60 ;; resnet_train) steps=40 ;; *) steps=100 ;; esac
  log=$(env "$@" timeout -k 5 200 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/cf.aiflame -- \
          env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
  echo "$w $* steps=$steps: $(grep -o 'stack capture cost [0-9.]* us[^;,]*' <<<"$log" | head -1)"
  grep -E 'stack-line probe|capture A/B' <<<"$log" | sed 's/^/  /'
  grep -q 'stack capture cost' <<<"$log" || { echo "  no summary; the log's end:"; tail -12 <<<"$log" | sed 's/^/    /'; }
}
for w in $workloads; do
  [ "${PROBE:-1}" = 1 ] && run "$w" AIFLAME_CAPTURE_PROBE=1
  for m in ${ABS:-3}; do run "$w" AIFLAME_CAPTURE_AB="$m"; done
done
