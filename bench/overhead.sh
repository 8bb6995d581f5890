#!/usr/bin/env bash
# Overhead of `aiflame record` on the GPU machine: plain and recorded runs alternate (A B A B ...),
# and the table gives the median, min and max of the per-pair ratios.
#
# Usage: bench/overhead.sh [PAIRS=5] [WORKLOAD...]   (workloads: demo gpt)
# Env:   AIFLAME_BIN (directory with aiflame, libaiflame_cupti.so, aiflame_demo_matmul; default .dist)
#        RECORD_OPTS (extra options for aiflame record), STEPS (gpt_train.py steps, default 100)
set -u
pairs=${1:-5}
shift || true
workloads=${*:-demo gpt}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
export STEPS=${STEPS:-100} PYTHONUNBUFFERED=1

now() { date +%s.%N; }

run_one() {  # run_one WORKLOAD MODE -> prints "wall loop"
  local w=$1 mode=$2 log=$out/run.log
  local cmd
  case $w in
    demo) cmd=("$bin/aiflame_demo_matmul" 200) ;;
    gpt) cmd=(python3 bench/workloads/gpt_train.py) ;;
  esac
  local t0 t1
  t0=$(now)
  if [ "$mode" = plain ]; then
    "${cmd[@]}" >"$log" 2>&1
  else
    # shellcheck disable=SC2086
    "$bin/aiflame" record -q --force ${RECORD_OPTS:-} -o "$out/bench.aiflame" -- "${cmd[@]}" >"$log" 2>&1
  fi
  t1=$(now)
  local loop
  loop=$(grep -o 'loop_s [0-9.]*' "$log" | awk '{print $2}')
  echo "$(awk "BEGIN{print $t1 - $t0}") ${loop:-0}"
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

printf '| workload | pairs | plain wall s (median) | recorded wall s (median) | wall ratio median [min, max] | loop ratio median [min, max] |\n'
printf '|---|---|---|---|---|---|\n'
for w in $workloads; do
  run_one "$w" plain >/dev/null  # warm caches (files, GPU clocks)
  : >"$out/ratios_wall"; : >"$out/ratios_loop"; : >"$out/plain_wall"; : >"$out/rec_wall"
  for i in $(seq "$pairs"); do
    read -r pw pl < <(run_one "$w" plain)
    read -r rw rl < <(run_one "$w" record)
    echo "$pw" >>"$out/plain_wall"; echo "$rw" >>"$out/rec_wall"
    awk "BEGIN{print $rw / $pw}" >>"$out/ratios_wall"
    if [ "$pl" != 0 ]; then awk "BEGIN{print $rl / $pl}" >>"$out/ratios_loop"; fi
    echo "pair $i $w: plain $pw s (loop $pl) recorded $rw s (loop $rl)" >&2
  done
  wr=$(median <"$out/ratios_wall"); wmin=$(sort -n "$out/ratios_wall" | head -1); wmax=$(sort -n "$out/ratios_wall" | tail -1)
  if [ -s "$out/ratios_loop" ]; then
    lr=$(median <"$out/ratios_loop"); lmin=$(sort -n "$out/ratios_loop" | head -1); lmax=$(sort -n "$out/ratios_loop" | tail -1)
    loopcol=$(printf '%.3f [%.3f, %.3f]' "$lr" "$lmin" "$lmax")
  else
    loopcol="-"
  fi
  printf '| %s | %s | %.2f | %.2f | %.3f [%.3f, %.3f] | %s |\n' "$w" "$pairs" "$(median <"$out/plain_wall")" \
    "$(median <"$out/rec_wall")" "$wr" "$wmin" "$wmax" "$loopcol"
done
