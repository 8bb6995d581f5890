#!/usr/bin/env bash
# Issue #24, twelfth session, on the GPU machine: keep1 (windows of one launch, sampling kept enabled
# between them; bench/keep1_budget_gpu.sh) against keep1u, which leaves the wait for the GPU's queue
# out of a window's cost and opens each window a uniform number of launches (below KEEP_SKIP) after the
# first one the callbacks see.
#   accuracy: the 3:1 arrangements under both, at a high window rate (ACC_RATE a second, ACC_BUDGET
#             permille): is the split unbiased? (These programs queue all their rounds, so each window
#             waits for the queue: 2-5 windows in a 13-s run of 2,000 rounds on the H200; 10,000 rounds
#             did not fit one call.)
#   demo:     the demo's three towers under keep1u at its default rate and budget (20 a second, 2%)
#   loops:    plain and keep1u alternating on the training loops (bench/windows_eval.sh)
# Usage: bench/keep1u_gpu.sh   Env: OUT (/tmp/keep1u), PARTS ("accuracy demo"), ACC_ROUNDS (2000),
#        ACC_RATE (500), ACC_BUDGET (500), KEEP_SKIP (1024), ROUNDS (2), LOOPS (gpt hf resnet)
set -u
out=${OUT:-/tmp/keep1u}
mkdir -p "$out"
export AIFLAME_EXPERIMENTAL=1
base="AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000"
u="AIFLAME_WIN_CHARGE_SYNC=0 AIFLAME_WIN_SKIP_MAX=${KEEP_SKIP:-1024}"
nvidia-smi --query-gpu=name --format=csv,noheader
for p in ${PARTS:-accuracy demo}; do
  case $p in
    accuracy)
      for v in keep1 keep1u; do
        extra=""; [ $v = keep1u ] && extra=$u
        echo "== accuracy under $v, ${ACC_RATE:-500} windows a second at most, budget ${ACC_BUDGET:-500} permille"
        # shellcheck disable=SC2086
        env $base $extra AIFLAME_WINDOWS_PER_S=${ACC_RATE:-500} AIFLAME_WINDOW_BUDGET_PERMILLE=${ACC_BUDGET:-500} \
          OUT=$out/acc_$v TIMEOUT=120 RECORD_OPTS="--pc-mode windows --period default --sass-timeout 0" \
          bash bench/accuracy.sh "${ACC_ROUNDS:-2000}" sequential streams size thin
        for m in sequential streams size thin; do
          # accuracy.sh records and reports with -q: the windows' line comes from a report of its own.
          echo "  $m: $(.dist/aiflame report --plain -f "$out/acc_$v/split_$m.aiflame" -o "$out/acc_$v/split_$m.again.folded" 2>&1 |
            grep -o '[0-9]* sampling windows ([0-9.]* a second), open [0-9.]*%' | head -1)"
        done
      done ;;
    demo)
      for v in keep1 keep1u; do
        extra=""; [ $v = keep1u ] && extra=$u
        # shellcheck disable=SC2086
        timeout -k 5 120 env $base $extra AIFLAME_WINDOWS_PER_S=20 AIFLAME_WINDOW_BUDGET_PERMILLE=20 .dist/aiflame record --force \
          --sass-timeout 0 --pc-mode windows --period default -o "$out/demo_$v.aiflame" -- .dist/aiflame_demo_matmul 200 >"$out/demo_$v.log" 2>&1
        echo "== demo under $v: exit $?; $(grep -o '[0-9]* sampling windows ([0-9.]* a second), open [0-9.]*%' "$out/demo_$v.log" | head -1)"
        .dist/aiflame report --plain -q -f "$out/demo_$v.aiflame" -o "$out/demo_$v.folded" &&
          awk '{k=$0; sub(/.*;-;/, "", k); sub(/;.*/, "", k); n[k]+=$NF} END {for (k in n) print "  kernel", k, n[k]}' "$out/demo_$v.folded"
      done ;;
    loops)
      PERIOD=default HF_STEPS=${HF_STEPS:-60} RESNET_STEPS=${RESNET_STEPS:-40} SKIP_ACCURACY=1 VARIANTS=${LOOP_VARIANTS:-plain keep1u} \
        RUN_TIMEOUT=100 OUT=$out/loops bash bench/windows_eval.sh "${ROUNDS:-2}" ${LOOPS:-gpt hf resnet} ;;
  esac
done
