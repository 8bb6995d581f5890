#!/usr/bin/env bash
# Issue #22: one of the launch path's in-run A/B switches (AIFLAME_AUTOGRAD_AB=N: the change and the
# code before it in alternate 64-ms slices of one run, so that the host's drift between runs, which
# moves the summary's figure by up to 0.4 us on the H200, falls on both sides alike). Per run: the A/B
# line (the change's side first, walked and memo launches compared apart at its end); then, per
# workload, the median and range of the compared-apart differences.
# Usage: bench/inrun_ab_gpu.sh AB [ROUNDS=2]   Env: B (.dist), WORKLOADS, STEPS_<workload> (hf_gpt2 150,
#        resnet_train 120, others 150)
set -u
ab=$1
rounds=${2:-2}
b=${B:-.dist}
out=$(mktemp -d)
for r in $(seq 1 "$rounds"); do
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    steps_var="STEPS_$w"
    steps=${!steps_var:-}
    [ -z "$steps" ] && case $w in resnet_train) steps=120 ;; *) steps=150 ;; esac
    start=$SECONDS
    log=$(AIFLAME_AUTOGRAD_AB=$ab timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/ab.aiflame -- \
            env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
    line=$(grep -o 'A/B: .*' <<<"$log")
    echo "$w steps=$steps round $r ($((SECONDS - start)) s): ${line:-no A/B line: $(tail -2 <<<"$log")}"
    d=$(grep -o 'compared apart: [-+0-9.]*' <<<"$line" | grep -o '[-+0-9.]*$')
    [ -n "$d" ] && echo "$d" >> "$out/$w"
  done
done
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  [ -f "$out/$w" ] || continue
  sort -g "$out/$w" | awk -v w="$w" '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
    printf "%s: compared-apart difference median %+.3f us [%+.3f, %+.3f], %d runs\n", w, m, v[1], v[NR], NR}'
done
