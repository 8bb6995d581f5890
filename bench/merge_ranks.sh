#!/bin/bash
# Merging the profiles of a large distributed job (issue #8), by simulation: WORLD synthetic rank
# profiles (bench/report/synthetic_profile.h, SECONDS each, every rank running the same program)
# merged by `aiflame report DIR`, for growing numbers of ranks, with wall time and peak RSS (getrusage
# of the child) against the summed size of the inputs. `--group-by none` keeps one picture whose size
# does not grow with the ranks; `--group-by rank` gives every rank its own tower, so its output grows.
# Usage: bench/merge_ranks.sh [BUILD_DIR] [WORLD] [SECONDS] [RANK COUNTS...]  (default: build 256 2 1 16 64 256)
set -euo pipefail
build=${1:-build}
world=${2:-256}
seconds=${3:-2}
shift 3 || true
counts=${*:-1 16 64 256}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((r = 0; r < world; r++)); do
  "$build/aiflame_synth_profile" "$work/all/p.$r.aiflame" "$seconds" 400 "$r" "$world" >/dev/null 2>&1 ||
    { mkdir -p "$work/all"; "$build/aiflame_synth_profile" "$work/all/p.$r.aiflame" "$seconds" 400 "$r" "$world" >/dev/null; }
done
echo "$world rank profiles of $seconds s: $(du -sm "$work/all" | cut -f1) MB"
printf '| ranks | group-by | inputs MB | wall s | peak RSS MB | folded lines |\n|---|---|---|---|---|---|\n'
for n in $counts; do
  mkdir -p "$work/n$n"
  for ((r = 0; r < n; r++)); do ln -sf "$work/all/p.$r.aiflame" "$work/n$n/p.$r.aiflame"; done
  for g in none rank; do
    [ "$g" = rank ] && [ "$n" -gt 64 ] && continue  # one tower per rank: the output alone grows with n
    python3 - "$build/aiflame" "$work/n$n" "$work/out.folded" "$n" "$g" <<'PY'
import os, resource, subprocess, sys, time
aiflame, d, out, n, g = sys.argv[1:6]
size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
t = time.monotonic()
subprocess.run([aiflame, "report", "-q", "--force", d, "--group-by", g, "-o", out], check=True)
wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
lines = sum(1 for _ in open(out, "rb"))
print("| %s | %s | %.1f | %.2f | %.0f | %d |" % (n, g, size / 1e6, wall, rss, lines))
PY
  done
done
