#!/usr/bin/env bash
# Issue #22 on the GPU machine: the summary's "stack capture cost" with parts of the launch path
# switched off, each a recording of its own, the variants alternating in ROUNDS rounds. What remains
# with everything off (no native stack, no Python frames, no autograd tracking) is the launch record's
# write and the callback's own bookkeeping: the floor under the capture on that host.
#   all        the defaults
#   noautograd AIFLAME_AUTOGRAD=0
#   python     AIFLAME_AUTOGRAD=0 --unwind off           (Python frames only)
#   native     AIFLAME_AUTOGRAD=0 --no-python            (native stack only)
#   none       AIFLAME_AUTOGRAD=0 --unwind off --no-python
# Usage: bench/capture_parts_gpu.sh [ROUNDS]   Env: B (.dist), WORKLOADS, VARIANTS, STEPS_<workload>
set -u
b=${B:-.dist}
rounds=${1:-1}
workloads=${WORKLOADS:-hf_gpt2 resnet_train gpt_train}
variants=${VARIANTS:-all noautograd python native none}
nvidia-smi --query-gpu=name --format=csv,noheader
for ((r = 0; r < rounds; r++)); do
  for w in $workloads; do
    steps_var="STEPS_$w"
    steps=${!steps_var:-}
    [ -z "$steps" ] && case $w in hf_gpt2) steps=60 ;; resnet_train) steps=40 ;; *) steps=100 ;; esac
    line="round $r $w steps=$steps:"
    for v in $variants; do
      envs=() flags=()
      case $v in
        all) ;;
        noautograd) envs=(AIFLAME_AUTOGRAD=0) ;;
        python) envs=(AIFLAME_AUTOGRAD=0) flags=(--unwind off) ;;
        native) envs=(AIFLAME_AUTOGRAD=0) flags=(--no-python) ;;
        none) envs=(AIFLAME_AUTOGRAD=0) flags=(--unwind off --no-python) ;;
        *) echo "unknown variant $v" >&2; exit 2 ;;
      esac
      log=$(env "${envs[@]}" timeout -k 5 200 "$b/aiflame" record -f --sass-timeout 0 "${flags[@]}" -o /tmp/cp.aiflame -- \
              env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
      cost=$(grep -o 'stack capture cost [0-9.]*' <<<"$log" | grep -o '[0-9.]*$')
      loop=$(grep -o 'loop_s [0-9.]*' <<<"$log" | grep -o '[0-9.]*$')
      line+=" $v ${cost:-?} us (loop ${loop:-?} s);"
      [ -z "$cost" ] && { echo "  $v: no summary; the log's end:"; tail -8 <<<"$log" | sed 's/^/    /'; }
    done
    echo "$line"
  done
done
