#!/usr/bin/env bash
# The recorder on real programs outside the three training loops (issue 22/23 "budgets hold on
# workloads you do not have"): per workload, a plain run, a recorded run with AIFLAME_LAB=verify_memos
# (every launch that took its walk memo walked again in full and compared: "memo check" line), and
# a recorded run with the defaults (the summary as a user sees it). Prints the loop times and the
# record's summary lines.
#
# Usage: bench/real_programs_check.sh [WORKLOAD...]
#   (default: timm_train compile_train jax_train cupy_loop graph_threads triton_loop hooks_train loader_train)
# Env:   AIFLAME_BIN (default .dist), RUN_TIMEOUT (seconds per run, default 150), VERIFY_STATS (1: the
#        verify run with AIFLAME_LAB=capture_stats as well, its breakdown; the stats take the launch path
#        that checks a memo by its key, so 0, the default, verifies the product's path: the Python
#        fingerprint's memos), MODES (default "plain verify default": which runs).
set -u
bin=${AIFLAME_BIN:-.dist}
limit=${RUN_TIMEOUT:-150}
workloads=${*:-timm_train compile_train jax_train cupy_loop graph_threads triton_loop hooks_train loader_train}
out=$(mktemp -d)
steps_of() {
  case $1 in
    triton_loop) echo 3000 ;;
    *) echo "" ;;
  esac
}
for w in $workloads; do
  s=$(steps_of "$w")
  envs=(); [[ -n $s ]] && envs=(STEPS="$s")
  echo "== $w"
  modes=${MODES:-plain verify default}
  if [[ " $modes " == *" plain "* ]]; then
    plain=$(timeout "$limit" env "${envs[@]}" python3 "bench/workloads/$w.py" 2>&1)
    echo "plain: $(grep -o 'loop_s [0-9.]*' <<<"$plain" || echo "(no loop_s; exit or output: $(tail -c 300 <<<"$plain"))")"
  fi
  for mode in $modes; do
    [[ $mode == plain ]] && continue
    extra=(); [[ $mode == verify ]] && extra=(AIFLAME_LAB=verify_memos)
    [[ $mode == verify && ${VERIFY_STATS:-0} == 1 ]] && extra=(AIFLAME_LAB=verify_memos,capture_stats)
    log=$(timeout "$limit" env "${extra[@]}" "$bin/aiflame" record -f --sass-timeout 0 -o "$out/$w.aiflame" -- \
            env "${envs[@]}" python3 "bench/workloads/$w.py" 2>&1)
    rc=$?
    echo "$mode (exit $rc): $(grep -o 'loop_s [0-9.]*' <<<"$log")"
    grep -E "memo check|capture stats|stack capture cost|attributed|autograd|GPU samples/s|warn|error|Traceback" <<<"$log" |
      grep -v "^aiflame: writing" | cut -c1-600 | sed 's/^/  /'
  done
done
rm -rf "$out"
