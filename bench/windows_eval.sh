#!/usr/bin/env bash
# Windows mode on the GPU machine (issue #24): does kernel-serialized sampling in short windows give
# samples with launch ids, how exact is the 3:1 split, and what does each way of leaving CUPTI idle
# between windows cost? Variants run round-robin, so drifts of the machine hit all of them: plain,
# default (today's continuous mode), windows (its defaults: sampling enabled only inside windows),
# keep* (sampling kept enabled between windows), win-never (enabled, no window: the floor, with kernel
# records on all the time), win-never-norec (the same without kernel records: sampling enabled alone).
# Usage: bench/windows_eval.sh [ROUNDS=2] [WORKLOAD...]   (workloads: gpt hf resnet storm threads graph triton)
# Env:   AIFLAME_BIN (default .dist), OUT (default /tmp/win), WIN (window options),
#        PERIOD (windows' sampling period, default CUPTI's), SKIP_ACCURACY=1, VARIANTS (names to run).
set -u
rounds=${1:-2}
shift || true
workloads=${*:-gpt hf storm}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp/win}
mkdir -p "$out"
export AIFLAME_EXPERIMENTAL=1 PYTHONUNBUFFERED=1
win=${WIN:---pc-mode windows --window-us 10000 --windows-per-sec 20}
popt=${PERIOD:+--period $PERIOD}

if [ "${SKIP_ACCURACY:-0}" != 1 ]; then
  echo "== a first window, traced"
  AIFLAME_DEBUG=1 timeout -k 5 60 "$bin/aiflame" record --force --sass-timeout 0 $win $popt -o "$out/trace.aiflame" -- \
    "$bin/aiflame_bench_kernels" split sequential 100 >"$out/trace.log" 2>&1
  echo "exit $?"; grep -E 'window|GetData|Start|Stop|error|fail' "$out/trace.log" | head -30; tail -12 "$out/trace.log"
  echo "== accuracy, windows (10 ms windows, 20 a second)"
  AIFLAME_WINDOW_BUDGET_PERMILLE=0 OUT=$out TIMEOUT=120 RECORD_OPTS="--pc-mode windows --window-us 10000 --windows-per-sec 20 $popt --sass-timeout 0" \
    bash bench/accuracy.sh 300 sequential streams size thin
  grep -h 'windows:' "$out"/split_*.log
  grep ';-;work;' "$out/split_thin.folded" | head -3 | cut -c1-300
  echo "== the demo's three towers, windows"
  timeout -k 5 120 "$bin/aiflame" record --force --sass-timeout 0 $win $popt -o "$out/demo.aiflame" -- "$bin/aiflame_demo_matmul" 200 >"$out/demo.log" 2>&1
  grep -E 'windows|samples' "$out/demo.log" | head -4
  "$bin/aiflame" report --plain -q -f "$out/demo.aiflame" -o "$out/demo.folded"
  awk '{k=$0; sub(/.*;-;/, "", k); sub(/;.*/, "", k); n[k]+=$NF} END {for (k in n) print "  kernel", k, n[k]}' "$out/demo.folded"
  echo "== accuracy, continuous (today's default), thin only"
  OUT=$out TIMEOUT=120 RECORD_OPTS="--sass-timeout 0" bash bench/accuracy.sh 300 thin
fi

command_of() {
  case $1 in
    gpt) echo "env STEPS=100 python3 bench/workloads/gpt_train.py" ;;
    hf) echo "env STEPS=${HF_STEPS:-30} python3 bench/workloads/hf_gpt2.py" ;;
    resnet) echo "env STEPS=${RESNET_STEPS:-20} python3 bench/workloads/resnet_train.py" ;;
    storm) echo "$bin/aiflame_bench_kernels storm 300000" ;;
    threads) echo "$bin/aiflame_bench_kernels threads 8 20000" ;;
    graph) echo "$bin/aiflame_bench_kernels graph 2000 10" ;;
    triton) echo "env STEPS=2000 python3 bench/workloads/triton_loop.py" ;;
  esac
}
# name|environment|record options ("-": plain)
# (Since 65ff36e the windows mode's defaults switch launch callbacks, kernel records and PC sampling
# off between windows; before it no AIFLAME_WIN_* switch reached the backend: bench/RESULTS.md.)
variants=(
  "plain|-|-"
  "default||"
  # Thirteenth session: the default's cost by source. nopc: the default without PC sampling (launch
  # callbacks, stack capture and kernel records); cbonly: without kernel records either (the launch
  # callback and the stack capture alone).
  "nopc||--no-pc-sampling"
  "cbonly|AIFLAME_ACTIVITY=0|--no-pc-sampling"
  "windows||--pc-mode windows $popt"
  "win||$win $popt"
  "keep|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_WIN_TOGGLE_ACT=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOW_BUDGET_PERMILLE=10|--pc-mode windows $popt"
  "keep-callbacks-on|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_WIN_TOGGLE_ACT=0 AIFLAME_WIN_TOGGLE_CB=0|$win $popt"
  "win-never|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_WIN_TOGGLE_ACT=0 AIFLAME_WIN_NEVER=1|$win $popt"
  "win-never-norec|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_WIN_TOGGLE_ACT=1 AIFLAME_WIN_NEVER=1|$win $popt"
  "win-noprime|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_WIN_TOGGLE_ACT=0 AIFLAME_WIN_PRIME=0|$win $popt"
  # Issue 24, sixth session. The floors: kernel-serialized (floor-ser) or continuous (floor-cont) PC
  # sampling enabled and primed, no launch callback, no kernel record, no window: what keeping sampling
  # enabled costs by itself. keep1: sampling kept enabled, windows of one launch (opened and closed
  # by the launching thread, so no other thread ever waits long), launch callbacks on only around a
  # window, no kernel records, CUPTI's default period; keep1-rec: the same with kernel records.
  "floor-ser|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WIN_NEVER=1 AIFLAME_WIN_NEVER_NOCB=1|--pc-mode windows $popt"
  "floor-cont|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WIN_NEVER=1 AIFLAME_WIN_NEVER_NOCB=1 AIFLAME_WIN_CONTINUOUS=1|--pc-mode windows $popt"
  "keep1|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOWS_PER_S=${KEEP_RATE:-20} AIFLAME_WINDOW_BUDGET_PERMILLE=${KEEP_BUDGET:-20}|--pc-mode windows ${PERIOD:+--period $PERIOD}"
  "keep1-rec|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_WIN_TOGGLE_ACT=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOWS_PER_S=${KEEP_RATE:-20} AIFLAME_WINDOW_BUDGET_PERMILLE=${KEEP_BUDGET:-20}|--pc-mode windows ${PERIOD:+--period $PERIOD}"
  # keep1u (twelfth session): keep1 with the wait for the GPU's queue left out of a window's cost
  # (AIFLAME_WIN_CHARGE_SYNC=0) and each window opened KEEP_SKIP launches at most after the first one
  # the callbacks see, a uniform number (AIFLAME_WIN_SKIP_MAX).
  "keep1u|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOWS_PER_S=${KEEP_RATE:-20} AIFLAME_WINDOW_BUDGET_PERMILLE=${KEEP_BUDGET:-20} AIFLAME_WIN_CHARGE_SYNC=0 AIFLAME_WIN_SKIP_MAX=${KEEP_SKIP:-1024}|--pc-mode windows ${PERIOD:+--period $PERIOD}"
  # keep1-cbon: keep1 with the launch callbacks on all the time (no cuptiEnableCallback around windows).
  "keep1-cbon|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WIN_TOGGLE_CB=0 AIFLAME_WINDOW_LAUNCHES=1 AIFLAME_WINDOW_US=1000 AIFLAME_WINDOWS_PER_S=${KEEP_RATE:-20} AIFLAME_WINDOW_BUDGET_PERMILLE=${KEEP_BUDGET:-20}|--pc-mode windows ${PERIOD:+--period $PERIOD}"
  # Seventh session: the floor with CUPTI's sampling worker thread sleeping SLEEP_MS (default 10) ms
  # between its polls of the hardware buffer (CUPTI's WORKER_THREAD_PERIODIC_SLEEP_SPAN).
  "floor-ser-sleep|AIFLAME_WIN_DISABLE_BETWEEN=0 AIFLAME_ACTIVITY=0 AIFLAME_WIN_NEVER=1 AIFLAME_WIN_NEVER_NOCB=1 AIFLAME_SLEEP_SPAN_MS=${SLEEP_MS:-10}|--pc-mode windows $popt"
  # PyTorch's profiler with stacks on the same script (Python workloads only): the reference.
  "torchprof|TP|-"
)
for w in $workloads; do
  read -r -a prog <<<"$(command_of "$w")"
  echo "== $w: ${prog[*]}"
  "${prog[@]}" >/dev/null 2>&1  # warm caches
  for ((r = 0; r < rounds; r++)); do
    for v in "${variants[@]}"; do
      IFS='|' read -r name envs opts <<<"$v"
      [ -n "${VARIANTS:-}" ] && [[ " $VARIANTS " != *" $name "* ]] && continue
      log=$out/${w}_${name}_$r.log
      t0=$(date +%s.%N)
      if [ "$envs" = TP ]; then
        [[ " ${prog[*]} " == *" python3 "* ]] || continue
        tp=()
        for a in "${prog[@]}"; do tp+=("$a"); [ "$a" = python3 ] && tp+=(bench/workloads/torchprof.py); done
        timeout -k 5 "${RUN_TIMEOUT:-200}" "${tp[@]}" >"$log" 2>&1
      elif [ "$envs" = - ]; then
        timeout -k 5 "${RUN_TIMEOUT:-200}" "${prog[@]}" >"$log" 2>&1
      else
        # shellcheck disable=SC2086
        timeout -k 5 "${RUN_TIMEOUT:-200}" env $envs "$bin/aiflame" record --force --sass-timeout 0 $opts -o "$out/$w.aiflame" -- "${prog[@]}" >"$log" 2>&1
      fi
      rc=$?
      wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
      loop=$(grep -o 'loop_s [0-9.]*' "$log" | tail -1 | cut -d' ' -f2)
      sps=$(grep -o '[0-9]* GPU samples/s' "$log" | head -1 | cut -d' ' -f1)
      cap=$(grep -o 'stack capture cost [0-9.]*' "$log" | cut -d' ' -f4)
      wl=$(grep -o 'windows: .*' "$log" | head -1)
      wins=$(grep -o '[0-9]* sampling windows ([0-9.]* a second), open [0-9.]*%' "$log" | head -1)
      costs=$(grep -o "windows' costs: .*" "$log" | head -1)
      printf '%-7s %-12s r%d rc=%s loop_s=%s wall_s=%.2f samples/s=%s capture_us=%s %s %s %s\n' "$w" "$name" "$r" "$rc" "${loop:-?}" "$wall" "${sps:--}" "${cap:--}" "${wins:+[$wins]}" "$wl" "$costs"
    done
  done
done
