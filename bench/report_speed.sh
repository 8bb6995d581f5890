#!/bin/bash
# SVG rendering speed: a folded file of LINES lines (default 100,000; from a synthetic profile, so
# stacks 30-60 frames deep) rendered by `aiflame report x.folded -o x.svg` and by flamegraph.pl.
# flamegraph.pl is not part of aiflame: fetch it yourself, e.g.
#   git clone https://github.com/brendangregg/FlameGraph /tmp/FlameGraph
# Usage: bench/report_speed.sh [BUILD_DIR] [FLAMEGRAPH_PL] [LINES] [RUNS]
set -euo pipefail
build=${1:-build}
flamegraph=${2:-/tmp/FlameGraph/flamegraph.pl}
lines=${3:-100000}
runs=${4:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 100 s of the synthetic run gives about 120,000 distinct folded lines; keep the first LINES.
"$build/aiflame_synth_profile" "$work/p.aiflame" 100 >/dev/null
"$build/aiflame" report -q "$work/p.aiflame" -o "$work/all.folded"
head -n "$lines" "$work/all.folded" >"$work/x.folded"
echo "input: $(wc -l <"$work/x.folded") lines, $(($(stat -c %s "$work/x.folded") / 1000000)) MB"
timeit() {  # name, command...: wall seconds of each run, and peak RSS of the child
  local name=$1
  shift
  python3 - "$name" "$runs" "$@" <<'PY'
import resource, subprocess, sys, time
name, runs, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = []
for _ in range(runs):
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL if cmd[-1] != "-" else None)
    times.append(time.monotonic() - t)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("%-14s %s s (runs), peak RSS %.0f MB" % (name, " ".join("%.2f" % x for x in times), rss))
PY
}
timeit "aiflame" "$build/aiflame" report -q --force "$work/x.folded" -o "$work/aiflame.svg"
if [ -x "$flamegraph" ] || [ -f "$flamegraph" ]; then
  timeit "flamegraph.pl" bash -c "perl '$flamegraph' '$work/x.folded' > '$work/fg.svg'"
  echo "svg sizes: aiflame $(($(stat -c %s "$work/aiflame.svg") / 1000)) kB, flamegraph.pl $(($(stat -c %s "$work/fg.svg") / 1000)) kB"
else
  echo "flamegraph.pl not found at $flamegraph: skipped"
fi
