#!/usr/bin/env bash
# Issue #22 on the GPU machine: how much of a launch's capture is reading the stack at all, and how
# much of the launch path is cache misses, each measured inside one run.
#  1. bench/probes/cold_lines.c: N lines read cold (a 256-MiB buffer written before each read) and hot,
#     independent and chained: the host's floor for reading N lines.
# Then per workload one recording per setting of SETTINGS (VAR=VALUE, several joined by commas), by
# default these two:
#  2. AIFLAME_CAPTURE_PROBE=1: before each launch, every stack line of its likely memo's check loaded and
#     timed, twice (StackCapture::set_probe_lines): what reading the stack alone costs a launch of that
#     loop, in place.
#  3. AIFLAME_CAPTURE_PROBE=2: after each launch from a memo, the autograd tracking's reads, the Python
#     walk and the capture run again at once and timed (Recorder::phase_probe): the parts with caches
#     cold and warm.
# AIFLAME_CAPTURE_STATS=1 gives the breakdown by part. (Commit 3e15890 also had AIFLAME_CAPTURE_AB, two
# prefetch variants switched in slices of one run; measured on the H100 and removed: bench/RESULTS.md.)
# Usage: bench/capture_floor_gpu.sh   Env: B (.dist), WORKLOADS ("hf_gpt2 resnet_train gpt_train"),
#        SETTINGS, FLOOR (1), STEPS_<workload> (hf_gpt2 60, resnet_train 40, others 100)
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
  grep -E 'stack-line probe|phase probe|capture stats|A/B:|launch histogram' <<<"$log" | sed 's/^/  /'
  grep -q 'stack capture cost' <<<"$log" || { echo "  no summary; the log's end:"; tail -12 <<<"$log" | sed 's/^/    /'; }
}
for w in $workloads; do
  for s in ${SETTINGS:-AIFLAME_CAPTURE_PROBE=1 AIFLAME_CAPTURE_PROBE=2}; do run "$w" ${s//,/ }; done
done
