#!/usr/bin/env bash
# Issue #22, thirty-fourth session: the walk memos of other call paths at a launch's depth ("donors",
# AIFLAME_MEMO_DONORS) on and off, alternating in one loop per round, at the default lengths with the
# product's defaults otherwise; each run's summary line (the stack capture cost with its split). Then one
# run per workload with AIFLAME_CAPTURE_STATS=1 (the launches that took a donor's walk) and one with
# AIFLAME_VERIFY_MEMOS=1 (every launch from a memo, a donor's included, walked again in full and compared).
# Usage: bench/donors_ab_gpu.sh [ROUNDS=2]   Env: B (.dist), WORKLOADS, STATS (1), VERIFY (1)
set -u
b=${B:-.dist}
run() {  # run LABEL ENV... : one recorded run of $w, its summary's capture line
  local label=$1; shift
  local start=$SECONDS log
  log=$(env "$@" timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/ab.aiflame -- \
        python3 "bench/workloads/$w.py" 2>&1)
  echo "$w $label ($((SECONDS - start)) s): $(grep -o 'stack capture cost.*' <<<"$log" | head -1); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1); $(grep -o '[0-9.]*% of GPU samples attributed' <<<"$log")"
  grep -E 'capture stats|memo check' <<<"$log" | sed 's/^/  /'
}
for r in $(seq 1 "${1:-2}"); do
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    if (( r % 2 )); then order="1 0"; else order="0 1"; fi
    for v in $order; do run "round $r donors=$v" AIFLAME_MEMO_DONORS=$v; done
  done
done
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  [[ ${STATS:-1} == 1 ]] && run "stats" AIFLAME_CAPTURE_STATS=1
  [[ ${VERIFY:-1} == 1 ]] && run "verify" STEPS=40 AIFLAME_VERIFY_MEMOS=1
done
