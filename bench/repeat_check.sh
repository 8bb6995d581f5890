#!/usr/bin/env bash
# Runs one workload N times under `aiflame record` (and, with PLAIN=1, N times without it, alternating)
# to catch a rare crash: each run with AIFLAME_DEBUG=1 (aiflame's fatal-signal report: the phase the
# crashing thread was in and its native stack) and PYTHONFAULTHANDLER=1 (the Python stack of every
# thread). Prints one line per run with its exit status; a failed run's log is kept in OUT and its
# crash lines are printed. Found in need: hf_gpt2.py was killed by SIGSEGV in one of 7 recorded runs
# (H200, 2026-11-27).
#
# Usage: bench/repeat_check.sh WORKLOAD [N=10]
# Env:   AIFLAME_BIN (.dist), STEPS (5), PLAIN (0), RUN_TIMEOUT (150), OUT (a temporary directory),
#        EXTRA_ENV (more VAR=value words for the recorded runs), DEBUG (1; 0: the recorded runs as a user
#        runs them, without AIFLAME_DEBUG and Python's faulthandler: the crash report is on anyway since
#        2026-11-27)
set -u
w=$1
n=${2:-10}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
fails=0 plain_fails=0
for i in $(seq 1 "$n"); do
  if [ "${PLAIN:-0}" = 1 ]; then
    timeout -k 5 "${RUN_TIMEOUT:-150}" env PYTHONFAULTHANDLER=1 STEPS="${STEPS:-5}" python3 "bench/workloads/$w.py" \
      > "$out/plain_$i.log" 2>&1
    rc=$?
    echo "run $i plain exit $rc"
    if [ $rc != 0 ]; then plain_fails=$((plain_fails + 1)); tail -40 "$out/plain_$i.log" | sed 's/^/    /'; else rm -f "$out/plain_$i.log"; fi
  fi
  # shellcheck disable=SC2086
  dbg="AIFLAME_DEBUG=1 PYTHONFAULTHANDLER=1"; [ "${DEBUG:-1}" = 0 ] && dbg="AIFLAME_DEBUG=0"
  timeout -k 5 "${RUN_TIMEOUT:-150}" env $dbg ${EXTRA_ENV:-} "$bin/aiflame" record -f \
    --sass-timeout 0 -o "$out/run.aiflame" -- env STEPS="${STEPS:-5}" python3 "bench/workloads/$w.py" > "$out/rec_$i.log" 2>&1
  rc=$?
  echo "run $i recorded exit $rc"
  if [ $rc != 0 ] || grep -q "killed by signal\|aiflame: signal\|Fatal Python error" "$out/rec_$i.log"; then
    fails=$((fails + 1))
    grep -A40 "aiflame: signal\|Fatal Python error" "$out/rec_$i.log" | head -80 | sed 's/^/    /'
    grep "killed by signal" "$out/rec_$i.log" | sed 's/^/    /'
  else
    rm -f "$out/rec_$i.log"
  fi
done
summary="$w: $fails of $n recorded runs failed"
[ "${PLAIN:-0}" = 1 ] && summary+=", $plain_fails of $n plain runs"
echo "$summary"
