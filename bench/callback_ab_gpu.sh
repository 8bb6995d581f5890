#!/usr/bin/env bash
# CUPTI's per-launch costs to a training loop, inside one run (issue #24; record/measure/callback_ab.h): per
# workload and mode, RUNS recordings with AIFLAME_LAB=callback_ab=N and STEP_TIMES=1, each read by
# bench/callback_ab.py. Modes: default (AIFLAME_LAB=callback_ab=1 at the defaults: continuous PC sampling
# and kernel records on throughout, the A/B sees the launch callback and aiflame's launch path), nopc
# (the same with --no-pc-sampling), records (AIFLAME_LAB=callback_ab=2 with --no-pc-sampling: the kernel
# records switched, the launch callbacks on throughout), sampling (AIFLAME_LAB=callback_ab=4: continuous PC
# sampling switched in 2-4 s slices, everything else at the defaults), sampling-floor (AIFLAME_LAB=callback_ab=12
# and AIFLAME_ACTIVITY=0: PC sampling switched, no launch callback and no kernel record at all), cwindows
# (AIFLAME_LAB=callback_ab=7: sampling, launch callbacks and kernel records switched together, as windows of
# continuous sampling with nothing between them would; cwindows-p20 the same at --period 20). The sampling
# modes leave out the steps within GUARD_MS (1000) after a switch: each Enable pays CUPTI's start again at
# the program's next launches.
# Usage: bench/callback_ab_gpu.sh [RUNS=2]   Env: WORKLOADS ("hf_gpt2 resnet_train"), MODES ("default nopc"),
#        STEPS (300), AIFLAME_BIN (.dist), OUT (a temporary directory), GUARD_MS (1000)
set -u
runs=${1:-2}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
for w in ${WORKLOADS:-hf_gpt2 resnet_train}; do
  for r in $(seq 1 "$runs"); do
    for mode in ${MODES:-default nopc}; do
      opts=(); ab=1; envs=(); guard=()
      case $mode in
        default) ;;
        nopc) opts=(--no-pc-sampling) ;;
        records) opts=(--no-pc-sampling); ab=2 ;;
        sampling) ab=4; guard=(--guard-ms "${GUARD_MS:-1000}") ;;
        sampling-floor) ab=12; envs=(AIFLAME_ACTIVITY=0); guard=(--guard-ms "${GUARD_MS:-1000}") ;;
        cwindows) ab=7; guard=(--guard-ms "${GUARD_MS:-1000}") ;;
        cwindows-p20) ab=7; opts=(--period 20); guard=(--guard-ms "${GUARD_MS:-1000}") ;;
        *) echo "unknown mode $mode"; continue ;;
      esac
      log=$out/${w}_${mode}_$r.log
      env "${envs[@]}" AIFLAME_LAB=callback_ab=$ab timeout -k 5 "${RUN_TIMEOUT:-120}" "$bin/aiflame" record -f --sass-timeout 0 "${opts[@]}" \
        -o "$out/$w.aiflame" -- env STEPS="${STEPS:-300}" STEP_TIMES=1 python3 "bench/workloads/$w.py" >"$log" 2>&1
      echo "$w $mode run $r: exit $? $(grep -o 'loop_s [0-9.]*' "$log")"
      python3 bench/callback_ab.py "${guard[@]}" "$log" "  $w $mode $r"
      [ ${#guard[@]} -gt 0 ] && python3 bench/callback_ab.py "$log" "  $w $mode $r (no guard)"
      grep -E "^aiflame: (warning|.*GPU samples|[0-9.]+% of GPU samples)" "$log" | cut -c1-220 | head -4
    done
  done
done
