# Sourced by the issue-22 device scripts (bench/history_figure_gpu.sh, bench/context_check_gpu.sh):
# recorded_run LABEL ENV... records bench/workloads/$w.py with "$b/aiflame" (b and w set by the caller)
# and prints one line: the summary's stack capture cost, its launches without a memo (their count, cost
# and part of the figure), the other launches' cost, the loop's time and the samples attributed; then
# the log's lines that match $RUN_LINES (an extended regex; none if unset), less those that match
# $RUN_SKIP, indented.
recorded_run() {
  local label=$1; shift
  local log
  log=$(env "$@" timeout -k 5 "${RUN_TIMEOUT:-300}" "$b/aiflame" record -f --sass-timeout 0 -o /tmp/recorded_run.aiflame -- \
        python3 "bench/workloads/$w.py" 2>&1)
  echo "$w $label: $(grep -o 'stack capture cost [0-9.]* us' <<<"$log"); $(grep -o '[0-9]* launches ([0-9.]*%) had no memo' <<<"$log"), $(grep -o '[0-9.]* us each ([0-9.]* us of the figure)' <<<"$log"); $(grep -o 'the other launches [0-9.]* us' <<<"$log"); $(grep -o 'loop_s[^,]*' <<<"$log" | head -1); $(grep -o '[0-9.]*% of GPU samples attributed' <<<"$log")"
  if [[ -n ${RUN_LINES:-} ]]; then
    grep -E "$RUN_LINES" <<<"$log" | grep -vE "${RUN_SKIP:-^$}" | cut -c1-400 | sed 's/^/  /'
  fi
  return 0
}
