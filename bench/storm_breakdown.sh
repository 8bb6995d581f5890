#!/usr/bin/env bash
# Where a launch storm's overhead goes: the storm workload (one tiny kernel launched back to back)
# plain and under `aiflame record` with one source or CUPTI setting changed at a time. Variants run
# round-robin (every round runs each variant once), so drifts of the machine hit all of them.
#
# Usage: bench/storm_breakdown.sh [ROUNDS=3] [LAUNCHES=300000]
# Env:   AIFLAME_BIN (default .dist), OUT (default /tmp/storm),
#        CMD (another program that prints "loop_s X", e.g. "env STEPS=100 python3
#        bench/workloads/gpt_train.py"; LAUNCHES is then the number of launches in its loop, used only
#        for the per-launch column, 0 to leave it out),
#        CORE=1 (only the first six variants, up to the callback alone).
# Prints, per variant, the median loop seconds, its ratio to plain, and the added microseconds per
# launch.
set -u
rounds=${1:-3}
n=${2:-300000}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp/storm}
mkdir -p "$out"
rm -f "$out"/v*.loop
read -r -a prog <<<"${CMD:-$bin/aiflame_bench_kernels storm $n}"

# name | environment | record options ("-" runs the program plain)
variants=(
  "plain|-|-"
  "default||"
  "no kernel records|AIFLAME_ACTIVITY=0|"
  "no PC sampling||--no-pc-sampling"
  "callback + capture only|AIFLAME_ACTIVITY=0|--no-pc-sampling"
  "CUPTI callback alone|AIFLAME_ACTIVITY=0 AIFLAME_LAB=skip_launches=1|--no-pc-sampling"
  "CUPTI callback + timestamp|AIFLAME_ACTIVITY=0 AIFLAME_LAB=skip_launches=2|--no-pc-sampling"
  "zeroed activity buffers|AIFLAME_LAB=activity_zeroed|"
  "no periodic activity flush|AIFLAME_LAB=activity_flush_every=0|"
)
[ "${CORE:-0}" = 1 ] && variants=("${variants[@]:0:6}")

for ((r = 0; r < rounds; r++)); do
  for i in "${!variants[@]}"; do
    IFS='|' read -r name envs opts <<<"${variants[$i]}"
    log=$out/v${i}_r$r.log
    if [ "$envs" = - ]; then
      "${prog[@]}" >"$log" 2>&1
    else
      # shellcheck disable=SC2086
      env $envs "$bin/aiflame" record --force -q --sass-timeout 0 $opts -o "$out/p$i.aiflame" -- \
        "${prog[@]}" >"$log" 2>&1
    fi
    loop=$(grep -o 'loop_s [0-9.]*' "$log" | awk '{print $2}')
    [ -n "$loop" ] && echo "$loop" >>"$out/v$i.loop"
    echo "round $((r + 1)) $name: ${loop:-no loop_s (see $log)}" >&2  # a cut-short call keeps what it measured
  done
done

# shellcheck source=bench/stats.sh
source "$(dirname "$0")/stats.sh"
plain=$(median <"$out/v0.loop")
echo "${prog[*]}, $n launches, $rounds rounds; median loop seconds"
echo "| variant | loop s | ratio | added us per launch | runs |"
echo "|---|---|---|---|---|"
for i in "${!variants[@]}"; do
  IFS='|' read -r name _ _ <<<"${variants[$i]}"
  m=$(median <"$out/v$i.loop")
  awk -v name="$name" -v m="$m" -v p="$plain" -v n="$n" -v runs="$(tr '\n' ' ' <"$out/v$i.loop")" \
    'BEGIN {us = n > 0 ? sprintf("%.2f", (m - p) * 1e6 / n) : "-"
            printf "| %s | %.3f | %.3f | %s | %s|\n", name, m, m / p, us, runs}'
done
