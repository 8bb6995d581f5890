#!/usr/bin/env bash
# Issue #22: one of the recorder's measurement switches (an AIFLAME_* variable that is 1 by default) on
# and off, alternating in one loop per round (on first in odd rounds), at the default lengths with the
# product's defaults otherwise; each run's summary line (the stack capture cost with its split). Then per
# workload and value one run with AIFLAME_VERIFY_MEMOS=1 (every launch from a memo walked again in full and
# compared; its line counts the launches that took their memo by the Python fingerprint, the capture's
# fast path) and, with STATS=1, one with AIFLAME_CAPTURE_STATS=1 (the switch on).
# Usage: bench/env_ab_gpu.sh VAR [ROUNDS=2]   Env: B (.dist), WORKLOADS, STATS (1), VERIFY (1)
# Example: bench/env_ab_gpu.sh AIFLAME_MEMO_HISTORY 2
set -u
var=$1
b=${B:-.dist}
run() {  # run LABEL ENV... : one recorded run of $w, its summary's capture line
  local label=$1; shift
  local start=$SECONDS log
  log=$(env "$@" timeout -k 5 300 "$b/aiflame" record -f --sass-timeout 0 -o /tmp/ab.aiflame -- \
        python3 "bench/workloads/$w.py" 2>&1)
  echo "$w $label ($((SECONDS - start)) s): $(grep -o 'stack capture cost.*' <<<"$log" | head -1); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1); $(grep -o '[0-9.]*% of GPU samples attributed' <<<"$log")"
  grep -E 'capture stats|memo check' <<<"$log" | sed 's/^/  /'
}
for r in $(seq 1 "${2:-2}"); do
  for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
    if (( r % 2 )); then order="1 0"; else order="0 1"; fi
    for v in $order; do run "round $r $var=$v" "$var=$v"; done
  done
done
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  if [[ ${VERIFY:-1} == 1 ]]; then
    for v in 1 0; do run "verify $var=$v" "$var=$v" STEPS=40 AIFLAME_VERIFY_MEMOS=1; done
  fi
  if [[ ${STATS:-1} == 1 ]]; then run "stats $var=1" "$var=1" AIFLAME_CAPTURE_STATS=1; fi
done
