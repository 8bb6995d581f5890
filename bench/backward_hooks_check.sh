#!/usr/bin/env bash
# Issue #23 item 3 on one GPU: kernels launched from Python hooks that autograd runs on its engine
# thread (Tensor.register_hook, register_full_backward_hook, register_post_accumulate_grad_hook with a
# per-parameter optimizer step). Records bench/workloads/hooks_train.py, reports folded stacks and
# checks each hook's kernels (bench/backward_hooks_check.py): under the script's loss.backward() line
# and [backward], the engine's frames then the hook's Python frame, and (hooks whose node has one)
# the forward stack that created the node. PASS/FAIL per check with the shares; exit 1 if any failed.
# DDP's NCCL all-reduce (hooks in C++) needs two GPUs: NPROC=2 bench/ddp_backward_check.sh.
# Usage (repo root, binaries in .dist/): bash bench/backward_hooks_check.sh
#   Env: AIFLAME_BIN (.dist), OUT (/tmp/aiflame_hooks), STEPS (30), RECORD_OPTS (--full: every launch)
set -u
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp/aiflame_hooks}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if ! STEPS=${STEPS:-30} "$bin/aiflame" record --force ${RECORD_OPTS:-} -o "$out/hooks.aiflame" -- python3 bench/workloads/hooks_train.py \
    > "$out/record.log" 2>&1; then
  echo "FAIL recording:"; tail -20 "$out/record.log"; exit 1
fi
grep -E "loop_s|aiflame: .*(autograd|warning)" "$out/record.log"
"$bin/aiflame" report --force "$out/hooks.aiflame" -o "$out/hooks.folded" 2>&1 | grep -E "autograd|attributed|capture cost"
python3 bench/backward_hooks_check.py "$out/hooks.folded" bench/workloads/hooks_train.py
status=$?
echo "(folded stacks: $out/hooks.folded)"
exit $status
