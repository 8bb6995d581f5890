#!/usr/bin/env bash
# The block-scheduler model against recordings of bench/workloads/bench_kernels.cu's `split` modes
# (H100, 300 rounds, `OUT=dir bench/accuracy_gpu.sh 300`, --no-cubins): kernel `work` (or `work_regs`)
# launched from path_a, path_b (and path_c) with a split of the work known by construction, written
# by the program as its `truth` line (tests/data/arrangements/split_MODE.truth). Each mode's attributed
# split must be within 2 percentage points of its truth for every path, except the two modes the model
# does not yet get within that bound (blocksize 2.55 and regs 4.59 points off on these recordings);
# those are held to their figure today (golden, ±0.05 points) so that any change to them shows, and
# bench/RESULTS.md names them as misses.
set -u
AIFLAME=$1
SRC=$2
D=$SRC/tests/data/arrangements
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# error MODE: the largest |attributed - truth| over the paths, in points (or "none" without samples).
error() {
  local m=$1
  "$AIFLAME" report -q --format folded "$D/split_$m.aiflame" -o "$T/$m.folded" || { echo none; return; }
  awk -v truth="$(cat "$D/split_$m.truth")" -v m="$m" '
    BEGIN { n = split(truth, t, " "); for (i = 2; i < n; i += 2) want[t[i]] = t[i + 1] }
    /;-;work(_regs)?;/ {
      c = $NF; total += c
      if ($0 ~ /;path_(a|heavy)[;(]/) got["path_a"] += c
      else if ($0 ~ /;path_(b|light)[;(]/) got["path_b"] += c
      else if ($0 ~ /;path_c[;(]/) got["path_c"] += c
    }
    END {
      if (total == 0) { print "none"; exit }
      err = 0
      for (p in want) { e = (got[p] / total - want[p]) * 100; if (e < 0) e = -e; if (e > err) err = e }
      printf "%.2f\n", err
    }' "$T/$m.folded"
}

for m in sequential streams size thin fullfull fullthin thinfull small three graph; do
  e=$(error $m)
  check "$m: within 2 points of its truth (error $e)" "[ '$e' != none ] && awk -v e='$e' 'BEGIN { exit !(e <= 2.0) }'"
done
for pair in blocksize:2.55 regs:4.59; do
  m=${pair%%:*} want=${pair#*:}
  e=$(error $m)
  check "$m: error $e points, as today ($want)" "[ '$e' != none ] && awk -v e='$e' -v w='$want' 'BEGIN { d = e - w; if (d < 0) d = -d; exit !(d <= 0.05) }'"
done
# Every mode's samples of `work` are split by the model (one kernel from several stacks), and the
# report says so: the share estimated is printed, not hidden.
"$AIFLAME" report "$D/split_fullfull.aiflame" --format folded -o "$T/ff.folded" 2>"$T/ff.err"
check "fullfull: the summary prints the share split by the model" 'grep -q "% split between launch stacks by the model" "$T/ff.err"'

finish arrangements
