#!/usr/bin/env python3
"""bench/callback_ab.py on synthetic logs of a known cost (steps jittered by 2%): 10%, 3% and no cost
must read within 0.01; every step that a switch overlaps counts for neither kind, every other step
for one; a log without switches or step times is refused with exit status 1. (With 10% jitter the
same logs read up to 0.025 off: the method's resolution at ~180 steps of each kind.)"""
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "callback_ab.py")


def synth(cost, seed, switch_mid_step=False):
    rng = random.Random(seed)
    t = 10**9
    ends, lines, on = [t], [], True
    nxt = t + 150_000_000
    for _ in range(400):
        step = int(20e6 * (1 + cost if on else 1) * rng.uniform(0.98, 1.02))
        if t >= nxt:
            at = t + (step // 2 if switch_mid_step else 0)
            on = not on
            lines.append(f"aiflame: callback A/B {at} {at + 30000} {'on' if on else 'off'}")
            nxt = t + rng.randint(100, 300) * 10**6
        t += step
        ends.append(t)
    lines.append("step_end_ns " + " ".join(map(str, ends)))
    return "\n".join(lines) + "\n"


def run(text):
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(text)
    try:
        r = subprocess.run([sys.executable, SCRIPT, f.name, "x"], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return r.returncode, r.stdout


def ratio(out):
    return float(out.split("on/off ")[1].split(";")[0])


def counted(out):
    """(switches, steps counted in on and off slices)"""
    words = out.split()
    return int(words[1]), int(words[3]) + int(words[8])


def main():
    fails = 0
    for cost, want in ((0.10, 1.10), (0.0, 1.00), (0.03, 1.03)):
        for seed in range(3):
            rc, out = run(synth(cost, seed))
            got = ratio(out) if rc == 0 else None
            ok = rc == 0 and abs(got - want) <= 0.01 and sum(counted(out)) == 400
            fails += not ok
            print(("ok  " if ok else "FAIL"), f"cost {cost} seed {seed}: {out.strip()}")
    # Switches in the middle of steps: those steps count for neither kind, so the estimate holds.
    rc, out = run(synth(0.10, 7, switch_mid_step=True))
    ok = rc == 0 and abs(ratio(out) - 1.10) <= 0.01 and sum(counted(out)) == 400
    fails += not ok
    print(("ok  " if ok else "FAIL"), "mid-step switches:", out.strip())
    for text in ("step_end_ns 1 2 3\n", "aiflame: callback A/B 1 2 off\n", ""):
        rc, out = run(text)
        ok = rc == 1
        fails += not ok
        print(("ok  " if ok else "FAIL"), f"refused {text.strip()!r}: exit {rc}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
