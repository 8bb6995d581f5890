#!/usr/bin/env bash
# Where a launch storm's overhead goes: the storm workload (one tiny kernel launched back to back)
# plain and under `aiflame record` with one source or CUPTI setting changed at a time. Variants run
# round-robin (every round runs each variant once), so drifts of the machine hit all of them.
#
# Usage: bench/storm_breakdown.sh [ROUNDS=3] [LAUNCHES=300000]
# Env:   AIFLAME_BIN (default .dist), OUT (default /tmp/storm)
# Prints, per variant, the median loop seconds, its ratio to plain, and the added microseconds per
# launch.
set -u
rounds=${1:-3}
n=${2:-300000}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp/storm}
mkdir -p "$out"

# name | environment | record options ("-" runs the program plain)
variants=(
  "plain|-|-"
  "default||"
  "no kernel records|AIFLAME_ACTIVITY=0|"
  "no PC sampling||--no-pc-sampling"
  "callback + capture only|AIFLAME_ACTIVITY=0|--no-pc-sampling"
  "CUPTI callback + timestamp|AIFLAME_ACTIVITY=0 AIFLAME_SKIP_LAUNCHES=2|--no-pc-sampling"
  "CUPTI callback alone|AIFLAME_ACTIVITY=0 AIFLAME_SKIP_LAUNCHES=1|--no-pc-sampling"
  "zeroed activity buffers|AIFLAME_ACTIVITY_ZEROED=1|"
  "no periodic activity flush|AIFLAME_ACTIVITY_FLUSH_EVERY=0|"
)

for ((r = 0; r < rounds; r++)); do
  for i in "${!variants[@]}"; do
    IFS='|' read -r name envs opts <<<"${variants[$i]}"
    log=$out/v${i}_r$r.log
    if [ "$envs" = - ]; then
      "$bin/aiflame_bench_kernels" storm "$n" >"$log" 2>&1
    else
      # shellcheck disable=SC2086
      env $envs "$bin/aiflame" record --force -q --sass-timeout 0 $opts -o "$out/p$i.aiflame" -- \
        "$bin/aiflame_bench_kernels" storm "$n" >"$log" 2>&1
    fi
    grep -o 'loop_s [0-9.]*' "$log" | awk '{print $2}' >>"$out/v$i.loop"
  done
done

# shellcheck source=bench/stats.sh
source "$(dirname "$0")/stats.sh"
plain=$(median <"$out/v0.loop")
echo "storm, $n launches, $rounds rounds; median loop seconds"
echo "| variant | loop s | ratio | added us per launch | runs |"
echo "|---|---|---|---|---|"
for i in "${!variants[@]}"; do
  IFS='|' read -r name _ _ <<<"${variants[$i]}"
  m=$(median <"$out/v$i.loop")
  awk -v name="$name" -v m="$m" -v p="$plain" -v n="$n" -v runs="$(tr '\n' ' ' <"$out/v$i.loop")" \
    'BEGIN {printf "| %s | %.3f | %.3f | %.2f | %s|\n", name, m, m / p, (m - p) * 1e6 / n, runs}'
done
