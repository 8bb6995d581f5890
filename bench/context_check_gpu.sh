#!/usr/bin/env bash
# Issue #22, thirty-fifth session, one device call: per workload at the default lengths, the product's
# defaults and AIFLAME_MEMO_CONTEXT=0 (the memo of the launch's Python context off) in turn (defaults
# first); one run with AIFLAME_CAPTURE_PROBE=3 (memo launches that took the predicted memo against those
# that searched); one 30-step run with AIFLAME_VERIFY_MEMOS=1 (every launch from a memo walked again and
# compared). Then the other real programs' verify runs (bench/real_programs_check.sh, MODES=verify).
# Usage: bench/context_check_gpu.sh   Env: B (.dist), WORKLOADS, OTHERS (the other programs; "" for none),
#        RUN_TIMEOUT (200 s a run), OTHERS_TIMEOUT (90 s)
set -u
b=${B:-.dist}
source "$(dirname "$0")/recorded_run.sh"
export RUN_TIMEOUT=${RUN_TIMEOUT:-200}
RUN_LINES='launch histogram: on_launch from|memo check' RUN_SKIP='us after'
run() { recorded_run "$@"; }
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  run "defaults"
  run "context=0" AIFLAME_MEMO_CONTEXT=0
  run "probe" AIFLAME_CAPTURE_PROBE=3
  run "verify" STEPS=30 AIFLAME_VERIFY_MEMOS=1
done
others=${OTHERS-timm_train compile_train jax_train cupy_loop graph_threads hooks_train}
if [[ -n $others ]]; then
  AIFLAME_BIN=$b MODES=verify RUN_TIMEOUT=${OTHERS_TIMEOUT:-90} bash bench/real_programs_check.sh $others
fi
