#!/usr/bin/env python3
"""Where a windows-mode run's time went, from AIFLAME_WIN_TRACE=1 lines (issue #24): the largest gaps
between consecutive trace lines, each with the line before and after it, and per-phase totals of the
window owner's steps. Usage: window_trace_gaps.py LOG [N=15]"""
import re, sys
pat = re.compile(r"aiflame\[win (\d+)\.(\d+) t(\d+)\]: (.*)")
lines = []
for l in open(sys.argv[1], errors="replace"):
    m = pat.search(l)
    if m:
        lines.append((int(m.group(1)) * 1e6 + int(m.group(2)), m.group(3), m.group(4)))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 15
print(f"{len(lines)} trace lines, {sum(1 for l in lines if l[2].startswith('window') and 'opening' in l[2])} openings, "
      f"{sum(1 for l in lines if l[2] == 'closed')} closes, {sum(1 for l in lines if l[2].startswith('waited'))} waits")
if len(lines) < 2:
    sys.exit(0)
gaps = sorted(((lines[i + 1][0] - lines[i][0], i) for i in range(len(lines) - 1)), reverse=True)[:n]
for g, i in gaps:
    a, b = lines[i], lines[i + 1]
    print(f"{g / 1000:10.3f} ms  t{a[1]} {a[2]!r}  ->  t{b[1]} {b[2]!r}")
print("last lines:")
for t, tid, what in lines[-6:]:
    print(f"  {(t - lines[0][0]) / 1e6:9.3f} s t{tid} {what}")
