#!/bin/bash
# Report throughput and memory on synthetic profiles of realistic shape (bench/report/synthetic_profile.h):
# for each run length, `aiflame report FILE -o x.folded` with its wall time and peak RSS (getrusage of
# the child) against the profile's size, then the Google Benchmark stages on the first length.
# Usage: bench/report_throughput.sh [BUILD_DIR] [SECONDS...]   (default: build 20 60)
set -euo pipefail
build=${1:-build}
shift || true
lengths=${*:-20 60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for s in $lengths; do
  "$build/aiflame_synth_profile" "$work/p.aiflame" "$s" >"$work/counts"
  records=$(sed -E 's/.*: ([0-9]+) PC records.*/\1/' "$work/counts")
  python3 - "$build/aiflame" "$work/p.aiflame" "$work/p.folded" "$records" "$s" <<'PY'
import os, resource, subprocess, sys, time
aiflame, profile, out, records, seconds = sys.argv[1:6]
t = time.monotonic()
subprocess.run([aiflame, "report", "-q", "--force", profile, "-o", out], check=True)
wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
size = os.path.getsize(profile)
lines = sum(1 for _ in open(out, "rb"))
print("%5s s run: %9d PC records, profile %6.1f MB, folded %7.1f MB (%d lines): %6.2f s, %5.2f M records/s, "
      "peak RSS %6.1f MB = %.2f x the profile" % (seconds, int(records), size / 1e6, os.path.getsize(out) / 1e6, lines,
                                                 wall, int(records) / wall / 1e6, rss / 1e6, rss / size))
PY
done
first=${lengths%% *}
AIFLAME_BENCH_SECONDS=$first "$build/aiflame_report_bench" --benchmark_counters_tabular=true
