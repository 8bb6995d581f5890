#!/usr/bin/env bash
# Issue #24 (and #23 item 5), seventh session, on the GPU machine: where windows of one launch with
# sampling kept enabled (keep1) lose their time. Four parts, each skippable with PARTS:
#   trace   eight threads on eight streams under keep1 with AIFLAME_WIN_TRACE=1 (hung twice in the
#           sixth session): the largest gaps between window phases (bench/window_trace_gaps.py)
#   floor   what sampling kept enabled costs programs with concurrency (threads, storm) by itself
#   resnet  plain / floor-ser / keep1 / keep1-cbon alternating, with the windows' cost line
#   autograd  the autograd tracking's cost: AIFLAME_AUTOGRAD=0 and =1 alternating, the summary's
#           "stack capture cost" (no breakdown timing in it)
# Usage: bench/window_diag_gpu.sh   Env: OUT (default /tmp/wdiag), PARTS, ROUNDS (4), AIFLAME_BIN (.dist)
set -u
out=${OUT:-/tmp/wdiag}
bin=${AIFLAME_BIN:-.dist}
parts=${PARTS:-trace floor resnet autograd}
rounds=${ROUNDS:-4}
mkdir -p "$out"
export AIFLAME_EXPERIMENTAL=1 PYTHONUNBUFFERED=1
keep1="AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOWS_PER_S=20 AIFLAME_WINDOW_BUDGET_PERMILLE=20"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
lscpu | grep -E '^Model name|^CPU\(s\)|^Thread|^NUMA node\(s\)' | tr -s ' '
for p in $parts; do
  case $p in
    trace)
      for i in 1 2; do
        # shellcheck disable=SC2086
        timeout -k 5 30 env $keep1 AIFLAME_WIN_TRACE=1 "$bin/aiflame" record --force --sass-timeout 0 --pc-mode windows \
          -o "$out/threads.aiflame" -- "$bin/aiflame_bench_kernels" threads 8 20000 >"$out/threads_trace$i.log" 2>&1
        echo "== threads 8 20000, keep1, traced (run $i): exit $?"
        grep -E "^aiflame: windows|loop|elapsed" "$out/threads_trace$i.log" | head -4
        python3 bench/window_trace_gaps.py "$out/threads_trace$i.log" 12
      done ;;
    floor)
      VARIANTS="plain floor-ser floor-cont" RUN_TIMEOUT=60 SKIP_ACCURACY=1 OUT=$out/floor bash bench/windows_eval.sh 2 threads storm ;;
    resnet)
      VARIANTS="plain floor-ser keep1 keep1-cbon" RESNET_STEPS=40 RUN_TIMEOUT=90 SKIP_ACCURACY=1 OUT=$out/resnet \
        bash bench/windows_eval.sh "$rounds" resnet ;;
    autograd)
      for w in gpt_train resnet_train; do
        for ((r = 0; r < rounds; r++)); do
          for a in 0 1; do
            (( r % 2 )) && a=$((1 - a))
            cost=$(AIFLAME_AUTOGRAD=$a "$bin/aiflame" record -f --sass-timeout 0 -o "$out/ag.aiflame" -- \
                     env STEPS=100 python3 "bench/workloads/$w.py" 2>&1 | grep -o 'stack capture cost [0-9.]*' | grep -o '[0-9.]*$')
            echo "autograd $w AIFLAME_AUTOGRAD=$a r$r cost_us=${cost:-?}"
          done
        done
      done | tee "$out/autograd.lines" ;;
  esac
done
