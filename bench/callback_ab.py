#!/usr/bin/env python3
"""What CUPTI's launch callback and aiflame's launch path cost a training loop's steps, inside one run.

Reads a log holding `aiflame record`'s stderr with AIFLAME_LAB=callback_ab=1 ("aiflame: callback A/B
START DONE on|off": each switch of the launch callbacks, CLOCK_MONOTONIC ns) and the workload's
stdout with STEP_TIMES=1 ("step_end_ns T0 T1 ...": the loop's start, then each step's end). A step
counts for the slice it lies in whole (steps across a switch count for neither). Prints the median
step of each kind, their ratio, the ratio slice pair by slice pair (a slice and the next, of the
other kind), and the ratio in each half of the run (its spread). Exit status 1 if there are too few
steps of either kind.

--guard-ms N leaves out, in addition, every step that starts less than N ms after a switch ended:
a switch whose cost lands on the program's next launches rather than inside the switch (PC sampling,
AIFLAME_LAB=callback_ab=4: each Enable pays CUPTI's start again at the next launch, 0.1-0.4 s). It also
prints what the switches cost: the steps from each switch to the guard's end, less as many median
steps of the switch's new kind.

Usage: callback_ab.py [--guard-ms N] LOG [LABEL]
"""
import statistics
import sys


def parse(path):
    switches, ends = [], []
    for line in open(path, errors="replace"):
        parts = line.split()
        if line.startswith("aiflame: callback A/B ") and len(parts) == 6:
            switches.append((int(parts[3]), int(parts[4]), parts[5] == "on"))
        elif line.startswith("step_end_ns "):
            ends = [int(x) for x in parts[1:]]
    return switches, ends


def slices(switches, guard_ns=0):
    """(lo, hi, on, index): the spans between switches, each from guard_ns after its switch ended; on
    before the first."""
    out, lo, on = [], 0, True
    for i, (start, done, state) in enumerate(switches):
        out.append((lo, start, on, i))
        lo, on = done + guard_ns, state
    out.append((lo, float("inf"), on, len(switches)))
    return out


def main():
    args = sys.argv[1:]
    guard_ms = 0.0
    if len(args) >= 2 and args[0] == "--guard-ms":
        try:
            guard_ms = float(args[1])
        except ValueError:
            guard_ms = -1
        if guard_ms < 0:
            print(f"--guard-ms wants a number of ms >= 0, not {args[1]!r}")
            return 2
        args = args[2:]
    if not args:
        print(__doc__.strip().splitlines()[-1])
        return 2
    label = args[1] if len(args) > 1 else args[0]
    switches, ends = parse(args[0])
    if not switches or len(ends) < 3:
        print(f"{label}: no switches ({len(switches)}) or step times ({len(ends)})")
        return 1
    sl = slices(switches, int(guard_ms * 1e6))
    by_slice = {}
    j = 0
    for a, b in zip(ends, ends[1:]):
        while j < len(sl) and sl[j][1] <= a:
            j += 1
        if j < len(sl) and sl[j][0] <= a and b <= sl[j][1]:
            by_slice.setdefault(sl[j][3], []).append(b - a)
    kind = {s[3]: s[2] for s in sl}
    on = [d for i, ds in by_slice.items() if kind[i] for d in ds]
    off = [d for i, ds in by_slice.items() if not kind[i] for d in ds]
    if len(on) < 5 or len(off) < 5:
        print(f"{label}: too few whole steps in slices (on {len(on)}, off {len(off)})")
        return 1
    ratio = statistics.median(on) / statistics.median(off)
    pairs = []
    for i in sorted(by_slice):
        if i + 1 in by_slice and kind[i] != kind[i + 1]:
            a, b = statistics.median(by_slice[i]), statistics.median(by_slice[i + 1])
            pairs.append(a / b if kind[i] else b / a)
    mid = ends[len(ends) // 2]
    halves = []
    for first in (True, False):
        o = [d for i, ds in by_slice.items() if kind[i] and (sl[i][1] <= mid) == first for d in ds]
        f = [d for i, ds in by_slice.items() if not kind[i] and (sl[i][1] <= mid) == first for d in ds]
        halves.append(statistics.median(o) / statistics.median(f) if o and f else float("nan"))
    p = sorted(pairs)
    line = (f"{label}: {len(switches)} switches; {len(on)} steps in on slices, {len(off)} in off slices; "
            f"median step {statistics.median(on) / 1e6:.2f} / {statistics.median(off) / 1e6:.2f} ms: "
            f"on/off {ratio:.3f}; by slice pair {statistics.median(p):.3f} [{p[0]:.3f}, {p[-1]:.3f}] over {len(p)} pairs; "
            f"halves {halves[0]:.3f}, {halves[1]:.3f}")
    if guard_ms > 0:
        line += "; " + switch_costs(switches, ends, guard_ms * 1e6, statistics.median(on), statistics.median(off))
    print(line)
    return 0


def switch_costs(switches, ends, guard_ns, med_on, med_off):
    """What each switch cost the program beyond the steps of its new kind: the time of the steps that
    start from the switch's start to the guard's end, less as many median steps of the new kind (the
    switch's own time included); the median over switches of each direction."""
    extra = {True: [], False: []}
    for start, done, state in switches:
        steps = [b - a for a, b in zip(ends, ends[1:]) if start <= b and a < done + guard_ns]
        if steps:
            extra[state].append(sum(steps) - len(steps) * (med_on if state else med_off))
    def show(v):
        return f"{statistics.median(v) / 1e6:+.0f} ms" if v else "-"
    return f"switch cost: to on {show(extra[True])}, to off {show(extra[False])} (medians over the switches)"


if __name__ == "__main__":
    sys.exit(main())
