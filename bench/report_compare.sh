#!/bin/bash
# Two builds of `aiflame report` side by side on the synthetic profiles of bench/report_throughput.sh:
# runs alternate (old, new, old, new...), each prints wall seconds and peak RSS (/usr/bin/time's %M),
# and the two folded outputs must be byte-identical.
# Usage: bench/report_compare.sh OLD_AIFLAME NEW_AIFLAME [RUNS=3] [SECONDS...=20 60 300]
#   (the synthetic profiles are written by NEW_AIFLAME's directory's aiflame_synth_profile)
set -euo pipefail
old=$1
new=$2
runs=${3:-3}
shift 3 || shift $#
lengths=${*:-20 60 300}
synth=$(dirname "$new")/aiflame_synth_profile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for s in $lengths; do
  "$synth" "$work/p.aiflame" "$s" >"$work/counts"
  records=$(sed -E 's/.*: ([0-9]+) PC records.*/\1/' "$work/counts")
  python3 - "$old" "$new" "$work" "$records" "$s" "$runs" <<'PY'
import os, subprocess, sys, time, statistics
old, new, work, records, seconds, runs = sys.argv[1:7]
size = os.path.getsize(f"{work}/p.aiflame")
res = {"old": [], "new": []}
for _ in range(int(runs)):
    for name, exe in (("old", old), ("new", new)):
        t = time.monotonic()
        # Through /usr/bin/time, whose %M is this run's own peak (getrusage would give the largest so far).
        out = subprocess.run(["/usr/bin/time", "-f", "%M", exe, "report", "-q", "--force", f"{work}/p.aiflame",
                              "-o", f"{work}/{name}.folded"], check=True, capture_output=True, text=True)
        wall = time.monotonic() - t
        rss_kb = int(out.stderr.strip().splitlines()[-1])
        res[name].append((wall, rss_kb * 1024))
same = open(f"{work}/old.folded", "rb").read() == open(f"{work}/new.folded", "rb").read()
for name in ("old", "new"):
    walls = [w for w, _ in res[name]]
    rss = max(r for _, r in res[name])
    print(f"{seconds:>4} s run, {int(records):>9} PC records, profile {size/1e6:5.1f} MB, {name}: "
          f"runs {' '.join('%.2f' % w for w in walls)} s, median {statistics.median(walls):.2f} s "
          f"({int(records)/statistics.median(walls)/1e6:.2f} M records/s), peak RSS {rss/1e6:.1f} MB "
          f"= {rss/size:.2f} x the profile")
print(f"{seconds:>4} s run: folded outputs {'byte-identical' if same else 'DIFFER'}")
if not same:
    sys.exit(1)
PY
done
