#!/usr/bin/env bash
# Does continuous PC sampling deliver samples again after a Disable and an Enable? (issue #24,
# fifteenth session: on hf_gpt2.py, with kernel records off (AIFLAME_CALLBACK_AB=12) or at --period 20
# (=7), it delivered none for the whole run, while at the defaults' settings (=4, =7) it did, and
# with the callbacks off but sampling never switched (=8) it did.) Per workload and setting, one short
# recording: the summary's GPU samples, and the A/B switches made. A setting whose samples are 0 while
# `never switched` has samples reproduces it.
# Usage: bench/reenable_check_gpu.sh   Env: WORKLOADS ("hf_gpt2 resnet_train gpt_train"), STEPS (300),
#        AIFLAME_BIN (.dist), OUT (a temporary directory)
set -u
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
settings=(
  "never switched, callbacks off, records off|AIFLAME_CALLBACK_AB=8 AIFLAME_ACTIVITY=0|"
  "never switched, defaults, --period 20||--period 20"
  "switched, callbacks and records on (=4)|AIFLAME_CALLBACK_AB=4|"
  "switched, records off (=4)|AIFLAME_CALLBACK_AB=4 AIFLAME_ACTIVITY=0|"
  "switched, callbacks off, records off (=12)|AIFLAME_CALLBACK_AB=12 AIFLAME_ACTIVITY=0|"
  "switched with callbacks and records (=7)|AIFLAME_CALLBACK_AB=7|"
  "switched with callbacks and records (=7), --period 20|AIFLAME_CALLBACK_AB=7|--period 20"
)
for w in ${WORKLOADS:-hf_gpt2 resnet_train gpt_train}; do
  for s in "${settings[@]}"; do
    IFS='|' read -r name envs opts <<<"$s"
    log=$out/${w}_$(echo "$name" | tr -c 'a-z0-9' _).log
    # shellcheck disable=SC2086  # envs and opts are word lists
    env $envs timeout -k 5 "${RUN_TIMEOUT:-100}" "$bin/aiflame" record -f --sass-timeout 0 $opts -o "$out/x.aiflame" -- \
      env STEPS="${STEPS:-300}" python3 "bench/workloads/$w.py" >"$log" 2>&1
    rc=$?
    echo "$w | $name: exit $rc, $(grep -o '[0-9]* GPU samples ([0-9]* dropped)' "$log" | head -1), $(grep -c 'callback A/B' "$log") switches"
  done
done
rm -f "$out/x.aiflame"
