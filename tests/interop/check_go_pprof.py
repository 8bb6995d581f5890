#!/usr/bin/env python3
"""Go's own pprof (`go tool pprof`, Debian golang-go) reads aiflame's .pb.gz as a user would.

For each fixture: `-top`, `-traces` and `-raw` must exit 0 and print nothing on stderr (no "Main
binary filename not available.", no symbolization attempt); the samples of `-traces` must add up to
the folded output's total; and every frame name that pprof's demangler would rewrite if it took our
names for mangled ones (`<module>`, template arguments, `(anonymous namespace)`, `operator()`) must
come out of pprof verbatim, with the same cumulative samples as in the folded output.

Usage: check_go_pprof.py AIFLAME SOURCE_DIR. Exit 77 (skip) without `go`, unless CI or
AIFLAME_REQUIRE_INTEROP is set.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

AIFLAME, SRC = sys.argv[1], sys.argv[2]
FIXTURES = ["demo_matmul.aiflame", "gpt_train.aiflame", "iaprof_current.txt"]
# Names pprof rewrites when it treats them as mangled (internal/symbolizer/symbolizer.go,
# demangleSingleFunction: "<module>" -> "<unknown>", "<...>" and "(...)" removed).
REWRITTEN = re.compile(r"<|\(anonymous namespace\)|operator\(\)")
# A Python or GPU source frame "name (file:line)": pprof shows the function name alone.
LOCATED = re.compile(r"^(.*) \(([^()]*):(\d+)\)$")

go = shutil.which("go")
if not go:
    msg = "go_pprof: needs Go's pprof (apt-get install -y golang-go)"
    if os.environ.get("CI") or os.environ.get("AIFLAME_REQUIRE_INTEROP"):
        print("FAIL " + msg)
        sys.exit(1)
    print("SKIP " + msg)
    sys.exit(77)

failures = []


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)


def pprof(args, path):
    env = dict(os.environ, PPROF_TMPDIR=os.path.dirname(path))
    r = subprocess.run([go, "tool", "pprof"] + args + [path], capture_output=True, text=True, env=env)
    if r.returncode != 0 or r.stderr.strip():
        fail(f"go tool pprof {' '.join(args)} {os.path.basename(path)}: rc {r.returncode}, stderr {r.stderr.strip()!r}")
    return r.stdout


def traces(text):
    """(count, [frame names leaf first]) per sample of `go tool pprof -traces`."""
    out = []
    for block in re.split(r"^-+\+-+$", text, flags=re.M)[1:]:
        count, frames = None, []
        for line in block.split("\n"):
            if not line.strip():
                continue
            m = re.match(r"^\s+(\d+)   (.*)$", line)
            if count is None and m:
                count, frames = int(m.group(1)), [m.group(2)]
            elif count is not None:
                frames.append(line.strip())
        if count is not None:
            out.append((count, frames))
    return out


def cumulative(stacks):
    cum = {}
    for count, frames in stacks:
        for name in set(frames):
            cum[name] = cum.get(name, 0) + count
    return cum


with tempfile.TemporaryDirectory() as tmp:
    for fixture in FIXTURES:
        base = os.path.join(tmp, fixture.replace(".", "_"))
        for ext, extra in ((".pb.gz", []), (".folded", ["--plain"])):
            subprocess.run([AIFLAME, "report", os.path.join(SRC, "tests/data", fixture), "-q", "-o", base + ext] + extra,
                           check=True)
        folded = []
        with open(base + ".folded") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                names = []
                for frame in stack.split(";"):
                    m = LOCATED.match(frame)
                    names.append(m.group(1) if m else frame)
                folded.append((int(count), names))
        want_total = sum(c for c, _ in folded)
        pprof(["-top"], base + ".pb.gz")
        pprof(["-raw"], base + ".pb.gz")
        got = traces(pprof(["-traces"], base + ".pb.gz"))
        got_total = sum(c for c, _ in got)
        if got_total != want_total:
            fail(f"{fixture}: pprof -traces has {got_total} samples, the folded output {want_total}")
        want_cum, got_cum = cumulative(folded), cumulative(got)
        checked = 0
        for name, n in sorted(want_cum.items()):
            if not REWRITTEN.search(name):
                continue
            checked += 1
            if got_cum.get(name) != n:
                fail(f"{fixture}: {name!r}: {got_cum.get(name)} samples in pprof, {n} in the folded output")
        print(f"go_pprof {fixture}: {got_total} samples, {checked} names that pprof would rewrite checked")
        if fixture == "gpt_train.aiflame" and checked < 10:
            fail(f"{fixture}: only {checked} names with <, (anonymous namespace) or operator() (fixture changed?)")

print(f"go_pprof: {len(failures)} failed")
sys.exit(1 if failures else 0)
