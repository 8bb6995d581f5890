#!/usr/bin/env bash
# Two recorder builds against each other and the plain program, on one machine, interleaved: each
# round runs plain, build A and build B, in an order that rotates every round so that neither build
# always follows the other. For a workload that prints "loop_s X" (bench/workloads/*.py) the table
# gives the median [min, max] of the per-round ratios of that loop time; otherwise of wall time.
# Use it when a figure moves between harness runs and the question is "the code or the host?".
#
# Usage: bench/ab_recorders.sh ROUNDS DIR_A DIR_B -- CMD...
#   DIR_A, DIR_B: directories each holding an `aiflame` with its libaiflame_cupti.so beside it.
# Env:   RECORD_OPTS (extra options for both recorders), OUT (scratch dir, default /tmp/ab).
set -u
if [ $# -lt 5 ] || [ "$4" != -- ]; then
  echo "usage: $0 ROUNDS DIR_A DIR_B -- CMD..." >&2
  exit 2
fi
rounds=$1 dir_a=$2 dir_b=$3
shift 4
out=${OUT:-/tmp/ab}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# shellcheck source=bench/stats.sh
source "$(dirname "$0")/stats.sh"

declare -A dir=([a]=$dir_a [b]=$dir_b)

# run MODE (plain, a or b) -> "seconds" (loop_s when the program prints it, else wall)
run() {
  local mode=$1 log=$out/$1.log t0 t1 loop
  t0=$(date +%s.%N)
  if [ "$mode" = plain ]; then
    "${cmd[@]}" >"$log" 2>&1
  else
    # shellcheck disable=SC2086  # RECORD_OPTS holds several options
    "${dir[$mode]}/aiflame" record -q --force ${RECORD_OPTS:-} -o "$out/$mode.aiflame" -- "${cmd[@]}" >"$log" 2>&1
  fi
  t1=$(date +%s.%N)
  loop=$(grep -o 'loop_s [0-9.]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ -n "$loop" ]; then echo "$loop"; else awk "BEGIN{print $t1 - $t0}"; fi
}
cmd=("$@")

echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >&2 2>/dev/null || true
run plain >/dev/null  # warm caches
: >"$out/ra"; : >"$out/rb"; : >"$out/rab"; : >"$out/tp"
orders=("plain a b" "a b plain" "b plain a")
for i in $(seq "$rounds"); do
  declare -A t=()
  for m in ${orders[$(((i - 1) % 3))]}; do t[$m]=$(run "$m"); done
  echo "round $i: plain ${t[plain]} A ${t[a]} B ${t[b]}" >&2
  echo "${t[plain]}" >>"$out/tp"
  awk "BEGIN{print ${t[a]} / ${t[plain]}}" >>"$out/ra"
  awk "BEGIN{print ${t[b]} / ${t[plain]}}" >>"$out/rb"
  awk "BEGIN{print ${t[a]} / ${t[b]}}" >>"$out/rab"
done
echo "| plain s (median) | A / plain | B / plain | A / B |"
echo "|---|---|---|---|"
printf '| %.3f | %s | %s | %s |\n' "$(median <"$out/tp")" "$(stats "$out/ra")" "$(stats "$out/rb")" "$(stats "$out/rab")"
