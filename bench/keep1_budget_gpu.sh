#!/usr/bin/env bash
# Issue #24, seventh session, on the GPU machine: windows of one launch with PC sampling kept enabled
# between them (keep1: launch callbacks on only around a window, no kernel records, CUPTI's default
# period, 2% budget) against the issue's budgets, plain and keep1 alternating (bench/windows_eval.sh):
# the three training loops (ROUNDS pairs), the storm, threads, graph and triton workloads (ROUNDS2
# pairs), then the 3:1 split's arrangements under keep1 and eight threads traced once; `demo` (the
# demo's three towers under keep1) and `real` (timm, torch.compile, JAX, CuPy, graph threads, hooks:
# one plain and one keep1 run each) only when PARTS names them.
# Usage: bench/keep1_budget_gpu.sh   Env: OUT (/tmp/keep1), ROUNDS (5), ROUNDS2 (3), PARTS, LOOPS,
#        LOOP_VARIANTS ("plain keep1"), MICRO
set -u
out=${OUT:-/tmp/keep1}
mkdir -p "$out"
export PERIOD=default HF_STEPS=${HF_STEPS:-60} RESNET_STEPS=${RESNET_STEPS:-40} SKIP_ACCURACY=1 AIFLAME_EXPERIMENTAL=1
keep1="AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOWS_PER_S=20 AIFLAME_WINDOW_BUDGET_PERMILLE=20"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
for p in ${PARTS:-threads loops micro accuracy}; do
  case $p in
    threads)
      for i in 1 2 3; do
        tr=0; [ "$i" = 1 ] && tr=1
        # shellcheck disable=SC2086
        timeout -k 5 30 env $keep1 AIFLAME_WIN_TRACE=$tr .dist/aiflame record --force --sass-timeout 0 --pc-mode windows \
          -o "$out/threads.aiflame" -- .dist/aiflame_bench_kernels threads 8 20000 >"$out/threads$i.log" 2>&1
        echo "== threads 8 20000 under keep1 (trace $tr): exit $? $(grep -o 'loop_s [0-9.]*\|elapsed[^,]*' "$out/threads$i.log" | head -1)"
        grep -E "^aiflame: windows" "$out/threads$i.log" | cut -c1-300
      done
      python3 bench/window_trace_gaps.py "$out/threads1.log" 5 ;;
    loops) VARIANTS=${LOOP_VARIANTS:-plain keep1} RUN_TIMEOUT=100 OUT=$out/loops bash bench/windows_eval.sh "${ROUNDS:-5}" ${LOOPS:-gpt hf resnet} ;;
    micro) VARIANTS="plain keep1" RUN_TIMEOUT=40 OUT=$out/micro bash bench/windows_eval.sh "${ROUNDS2:-3}" ${MICRO:-storm threads graph triton} ;;
    accuracy)
      # shellcheck disable=SC2086
      env $keep1 OUT=$out/acc TIMEOUT=60 RECORD_OPTS="--pc-mode windows --sass-timeout 0" bash bench/accuracy.sh 300 sequential streams size thin ;;
    demo)  # the demo's three towers under keep1: GPU samples per kernel
      # shellcheck disable=SC2086
      timeout -k 5 120 env $keep1 .dist/aiflame record --force --sass-timeout 0 --pc-mode windows -o "$out/demo.aiflame" -- \
        .dist/aiflame_demo_matmul 200 >"$out/demo.log" 2>&1
      echo "== demo under keep1: exit $?"; grep -E "windows|samples" "$out/demo.log" | cut -c1-200 | head -5
      .dist/aiflame report --plain -q -f "$out/demo.aiflame" -o "$out/demo.folded" &&
        awk '{k=$0; sub(/.*;-;/, "", k); sub(/;.*/, "", k); n[k]+=$NF} END {for (k in n) print "  kernel", k, n[k]}' "$out/demo.folded" ;;
    real)  # other real programs: one plain and one keep1 run each, exit status and the windows' lines
      for w in ${REAL:-timm_train compile_train jax_train cupy_loop graph_threads hooks_train}; do
        plain=$(timeout 150 python3 "bench/workloads/$w.py" 2>&1 | grep -o 'loop_s [0-9.]*')
        # shellcheck disable=SC2086
        log=$(timeout -k 5 150 env $keep1 .dist/aiflame record --force --sass-timeout 0 --pc-mode windows -o "$out/$w.aiflame" -- \
                python3 "bench/workloads/$w.py" 2>&1)
        echo "== $w: plain ${plain:-?}, keep1 exit $? $(grep -o 'loop_s [0-9.]*' <<<"$log")"
        grep -E "^aiflame: (windows|[0-9]+ sampling windows|autograd|[0-9.]+% of GPU samples)" <<<"$log" | cut -c1-250
      done ;;
  esac
done
