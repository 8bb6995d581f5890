#!/usr/bin/env bash
# Issue #22, thirty-fifth session, one device call: per workload at the default lengths, the product's
# defaults and AIFLAME_MEMO_CONTEXT=0 (the memo of the launch's Python context off) in turn (defaults
# first); one run with AIFLAME_CAPTURE_PROBE=3 (memo launches that took the predicted memo against those
# that searched); one 30-step run with AIFLAME_VERIFY_MEMOS=1 (every launch from a memo walked again and
# compared). Then the other real programs' verify runs (bench/real_programs_check.sh, MODES=verify).
# Usage: bench/context_check_gpu.sh   Env: B (.dist), WORKLOADS, OTHERS (the other programs; "" for none)
set -u
b=${B:-.dist}
run() {  # run LABEL ENV...
  local label=$1; shift
  local log
  log=$(env "$@" timeout -k 5 200 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/c.aiflame -- \
        python3 "bench/workloads/$w.py" 2>&1)
  echo "$w $label: $(grep -o 'stack capture cost [0-9.]* us' <<<"$log"); $(grep -o '[0-9]* launches ([0-9.]*%) had no memo' <<<"$log"), $(grep -o '[0-9.]* us each ([0-9.]* us of the figure)' <<<"$log"); $(grep -o 'the other launches [0-9.]* us' <<<"$log"); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1); $(grep -o '[0-9.]*% of GPU samples attributed' <<<"$log")"
  grep -E 'launch histogram: on_launch from|memo check' <<<"$log" | grep -v 'us after' | cut -c1-300 | sed 's/^/  /'
}
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  run "defaults"
  run "context=0" AIFLAME_MEMO_CONTEXT=0
  run "probe" AIFLAME_CAPTURE_PROBE=3
  run "verify" STEPS=30 AIFLAME_VERIFY_MEMOS=1
done
others=${OTHERS-timm_train compile_train jax_train cupy_loop graph_threads hooks_train}
[[ -n $others ]] && AIFLAME_BIN=$b MODES=verify RUN_TIMEOUT=${RUN_TIMEOUT:-90} bash bench/real_programs_check.sh $others
