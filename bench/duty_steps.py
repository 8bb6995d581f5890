#!/usr/bin/env python3
# The budgets of issue 70 from one duty-cycled run's step times and its window log:
#   duty_steps.py STEPS_OUT [WINDOW_LOG] [--plain PLAIN_STEPS_OUT]
# STEPS_OUT holds the workload's "step_end_ns ..." line (STEP_TIMES=1; CLOCK_MONOTONIC), WINDOW_LOG the
# windows.<pid>.log of `record --duty` (begun/opened/closing/closed on the same clock). Prints the
# whole-run overhead (mean step over the whole run against the median step between windows), the
# median step between windows against the plain run's median, the worst step that overlaps an opening
# against the median, and the windows' samples and opening costs by part.
import re, statistics, sys

def steps(path):
    for line in open(path):
        if line.startswith("step_end_ns "):
            t = list(map(int, line.split()[1:]))
            return [(t[i], t[i + 1]) for i in range(len(t) - 1)]
    sys.exit(f"{path}: no step_end_ns line (STEP_TIMES=1)")

def windows(path):
    out = []
    for line in open(path):
        if line.startswith("window "):
            out.append({k: v for k, v in (w.split("=", 1) for w in line.split()[1:] if "=" in w)})
    return out

args = sys.argv[1:]
plain = None
if "--plain" in args:
    i = args.index("--plain"); plain = args[i + 1]; del args[i:i + 2]
st = steps(args[0])
ws = windows(args[1]) if len(args) > 1 else []
ms = lambda a, b: (b - a) / 1e6
dur = [ms(a, b) for a, b in st]
def overlaps(s, lo, hi): return s[0] < hi and s[1] > lo
recorded = [(int(w["begun"]), int(w["closed"])) for w in ws]
openings = [(int(w["begun"]), int(w["opened"])) for w in ws]
between = [d for s, d in zip(st, dur) if not any(overlaps(s, lo, hi) for lo, hi in recorded)]
inside = [d for s, d in zip(st, dur) if any(overlaps(s, lo, hi) for lo, hi in recorded)]
at_open = [d for s, d in zip(st, dur) if any(overlaps(s, lo, hi) for lo, hi in openings)]
run_s = ms(st[0][0], st[-1][1]) / 1e3
mean = statistics.mean(dur)
print(f"steps {len(dur)}, run {run_s:.1f} s, windows in the loop {sum(1 for lo, hi in recorded if lo < st[-1][1] and hi > st[0][0])}")
if between:
    med = statistics.median(between)
    mb = statistics.mean(between)
    print(f"mean step {mean:.3f} ms; median between windows {med:.3f} ms ({len(between)} steps): whole-run overhead {100 * (mean / med - 1):+.3f}%")
    # The measure compares a mean with a median, which a skewed step distribution moves by
    # itself (hf_gpt2.py's mean is below its median): the mean between windows too.
    print(f"  against the mean between windows ({mb:.3f} ms): {100 * (mean / mb - 1):+.3f}%")
    closings = [(int(w["closing"]), int(w["closed"])) for w in ws]
    at_close = [d for s, d in zip(st, dur) if any(overlaps(s, lo, hi) for lo, hi in closings)]
    if at_close: print(f"worst step overlapping a closing {max(at_close):.1f} ms = {max(at_close) / med:.2f}x the median")
    if inside: print(f"steps touching a window: {len(inside)}, their median {statistics.median(inside):.3f} ms ({statistics.median(inside) / med:.2f}x)")
    if at_open: print(f"worst step overlapping an opening {max(at_open):.1f} ms = {max(at_open) / med:.2f}x the median; worst step anywhere {max(dur):.1f} ms")
else:
    print(f"mean step {mean:.3f} ms; median {statistics.median(dur):.3f} ms (no step between windows)")
if plain:
    pd = [ms(a, b) for a, b in steps(plain)]
    pm = statistics.median(pd)
    q = sorted(pd)
    print(f"plain: median {pm:.3f} ms [p10 {q[len(q) // 10]:.3f}, p90 {q[9 * len(q) // 10]:.3f}] over {len(pd)} steps, mean {statistics.mean(pd):.3f}; "
          + (f"between windows / plain median: {statistics.median(between) / pm:.4f}" if between else ""))
for w in ws:
    print(f"  window {w['seq']}{' (retry)' if w.get('retry') != '0' else ''}: {w['samples']} samples, {w['launches']} launches, "
          f"{float(w['length_ms']):.0f} ms open; opening {float(w['prepare_ms']):.0f} + {float(w['subscribe_ms']):.0f} + {float(w['enable_ms']):.0f} ms "
          f"(load, subscribe, sampling enabled), closing {float(w['close_ms']):.0f} ms{' SILENT' if w.get('silent') == '1' else ''}")
