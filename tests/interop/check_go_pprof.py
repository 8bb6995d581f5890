#!/usr/bin/env python3
"""Go's own pprof (`go tool pprof`, Debian golang-go) reads aiflame's .pb.gz as a user would.

For each fixture: `-top`, `-traces` and `-raw` must exit 0 and print nothing on stderr (no "Main
binary filename not available.", no symbolization attempt); the samples of `-traces` must add up to
the folded output's total; and every frame name that pprof's demangler would rewrite if it took our
names for mangled ones (`<module>`, template arguments, `(anonymous namespace)`, `operator()`) must
come out of pprof verbatim, with the same cumulative samples as in the folded output.

Then what a user asks of pprof (issue #67), each against aiflame's own output of the same input:
- `-top` ranks kernels: every row with flat samples is a kernel (the stall reason is a label);
- `-tagfocus=device=0` keeps GPU 0's samples (a numeric label of 0 needs a unit, or pprof drops it);
  on the DDP job, `-tagfocus=rank=N` and `-tagfocus=pid=N` keep exactly `report --pids` of that rank;
- `-raw` lists one mapping per library with its build ID and the native locations' real addresses;
- `-list` of a Python function names its full recorded path (and prints its source once pprof is
  told where the tree is: -source_path, -trim_path);
- `-top -addresses`: one instruction offset of two kernels is two nodes;
- folded input (`main;foo 10`): both frames are frames, none becomes the process label.

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


def pprof(args, path, stderr_ok=None):
    """stdout of go tool pprof ARGS PATH; stderr must be empty, or only lines matching stderr_ok."""
    env = dict(os.environ, PPROF_TMPDIR=os.path.dirname(path))
    r = subprocess.run([go, "tool", "pprof"] + args + [path], capture_output=True, text=True, env=env)
    err = [l for l in r.stderr.strip().split("\n") if l and not (stderr_ok and re.search(stderr_ok, l))]
    if r.returncode != 0 or err:
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


TOP_ROW = re.compile(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$")


def top_rows(text):
    """(flat, cum, name) of each row of `go tool pprof -top`."""
    return [(int(m.group(1)), int(m.group(2)), m.group(3)) for m in map(TOP_ROW.match, text.split("\n")) if m]


def report(args):
    subprocess.run([AIFLAME, "report", "-q"] + args, check=True)


def folded_total(path):
    with open(path) as f:
        return sum(int(l.rpartition(" ")[2]) for l in f if l.strip())


def user_checks(tmp):
    # -top ranks kernels: every row with flat samples is a kernel, the frame after "-".
    for fixture in ("demo_matmul.aiflame", "gpt_train.aiflame"):
        base = os.path.join(tmp, "top_" + fixture.replace(".", "_"))
        report([os.path.join(SRC, "tests/data", fixture), "-o", base + ".pb.gz"])
        report([os.path.join(SRC, "tests/data", fixture), "--plain", "-o", base + ".folded"])
        kernels = set()
        with open(base + ".folded") as f:
            for line in f:
                frames = line.rpartition(" ")[0].split(";")
                if "-" in frames:
                    kernels.add(frames[frames.index("-") + 1])
        rows = top_rows(pprof(["-top", "-nodecount=100000", "-nodefraction=0"], base + ".pb.gz"))
        flat = [(n, name) for n, _, name in rows if n]
        not_kernels = [name for _, name in flat if name not in kernels]
        if not flat or not_kernels:
            fail(f"{fixture}: pprof -top ranks {not_kernels[:3] or 'nothing'}, not kernels")
        else:
            print(f"go_pprof {fixture}: -top ranks {len(flat)} kernels, first {flat[0][1][:60]!r} ({flat[0][0]})")
        # Every sample is on GPU 0 in these recordings: -tagfocus=device=0 keeps them all.
        kept = sum(n for n, _ in flat)
        gpu0 = sum(n for n, _, _ in top_rows(pprof(["-top", "-nodecount=100000", "-nodefraction=0", "-tagfocus=device=0"], base + ".pb.gz",
                                                   stderr_ok="as range, not regexp")) if n)
        if gpu0 != kept or not gpu0:
            fail(f"{fixture}: -tagfocus=device=0 keeps {gpu0} of {kept} samples")
        else:
            print(f"go_pprof {fixture}: -tagfocus=device=0 keeps all {gpu0} samples")
        # Instructions: one offset in two kernels is two nodes of -addresses (each kernel's own PC).
        by_addr = {}
        for n, _, name in top_rows(pprof(["-top", "-addresses", "-nodecount=100000", "-nodefraction=0"], base + ".pb.gz")):
            parts = name.split(" ", 1)  # "0000000000000280 matmul_basic matmul.cu:42"
            if n and len(parts) == 2 and re.fullmatch(r"[0-9a-f]{16}", parts[0]):  # flat: the leaf's address
                by_addr.setdefault(parts[0], set()).add(parts[1].split(" ")[0])
        shared = [a for a, ks in by_addr.items() if len(ks) > 1]
        if fixture == "demo_matmul.aiflame":
            if not shared:
                fail(f"{fixture}: no instruction offset of two kernels shows as two nodes in -top -addresses")
            else:
                print(f"go_pprof {fixture}: {len(shared)} offsets are nodes of several kernels, e.g. {shared[0]}: {sorted(by_addr[shared[0]])[:2]}")

    # Mappings: gpt_train's native frames are in their libraries' mappings, with build IDs and real
    # addresses (pprof -raw: "Mappings" then "ID: START/LIMIT/OFFSET FILE BUILDID").
    base = os.path.join(tmp, "maps")
    report([os.path.join(SRC, "tests/data/gpt_train.aiflame"), "-o", base + ".pb.gz"])
    raw = pprof(["-raw"], base + ".pb.gz")
    maps = re.findall(r"^\s*(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?([0-9a-f]*)", raw.split("Mappings")[-1], re.M)
    libs = [m for m in maps if "/" in m[4] and int(m[1], 16) > 0]
    with_id = [m for m in libs if m[5]]
    if len(libs) < 3 or len(with_id) < len(libs) // 2:
        fail(f"gpt_train: pprof -raw lists {len(libs)} library mappings, {len(with_id)} with a build ID: {maps[:4]}")
    else:
        print(f"go_pprof gpt_train: {len(libs)} library mappings, {len(with_id)} with build IDs, e.g. {with_id[0][4]} {with_id[0][5][:16]}")
    locs = re.findall(r"^\s*\d+: (0x[0-9a-f]+) M=(\d+) (.*)$", raw.split("Locations")[-1].split("Mappings")[0], re.M)
    in_libs = {m[0] for m in libs}
    native = [l for l in locs if l[1] in in_libs]
    lo_hi = {m[0]: (int(m[1], 16), int(m[2], 16)) for m in libs}
    outside = [l for l in native if not lo_hi[l[1]][0] <= int(l[0], 16) < lo_hi[l[1]][1]]
    if not native or outside:
        fail(f"gpt_train: {len(native)} locations in library mappings, {len(outside)} outside their range: {outside[:2]}")
    else:
        print(f"go_pprof gpt_train: {len(native)} native locations at their addresses in their libraries")

    # -list finds a Python function's full recorded path; given the tree's place, its source.
    lst = pprof(["-list", "^step$"], base + ".pb.gz", stderr_ok="could not|no such file|open ")
    m = re.search(r"ROUTINE =+ step in (\S+)", lst)
    if not m or not m.group(1).startswith("/") or not m.group(1).endswith("/gpt_train.py"):
        fail(f"gpt_train: pprof -list step names {m.group(1) if m else 'no routine'}, not the full path of gpt_train.py")
    else:
        recorded = m.group(1)
        src = pprof(["-list", "^step$", "-source_path=" + os.path.join(SRC, "bench/workloads"),
                     "-trim_path=" + os.path.dirname(recorded)], base + ".pb.gz")
        if "loss" not in src and "optimizer" not in src:
            fail(f"gpt_train: pprof -list step with -source_path shows no source line of gpt_train.py: {src[:300]!r}")
        else:
            print(f"go_pprof gpt_train: -list step: {recorded}, source found under -source_path")

    # Ranks and pids of a DDP job: one label each, selecting what report --pids selects.
    base = os.path.join(tmp, "ddp")
    report([os.path.join(SRC, "tests/data/ddp"), "-o", base + ".pb.gz"])
    tags = pprof(["-tags"], base + ".pb.gz")
    for rank in (0, 1):
        report([os.path.join(SRC, "tests/data/ddp"), "--pids", f"rank {rank}", "--group-by", "rank", "--plain",
                "-o", f"{base}_{rank}.folded"])
        want = folded_total(f"{base}_{rank}.folded")
        got = sum(n for n, _, _ in top_rows(pprof(["-top", "-nodecount=100000", "-nodefraction=0", f"-tagfocus=rank={rank}"], base + ".pb.gz",
                                                  stderr_ok="as range, not regexp")))
        if got != want or not want:
            fail(f"ddp: -tagfocus=rank={rank} keeps {got} samples, report --pids 'rank {rank}' {want}")
        else:
            print(f"go_pprof ddp: -tagfocus=rank={rank} keeps {got} samples, as report --pids 'rank {rank}'")
    if not re.search(r"^\s*pid\b", tags, re.M) or not re.search(r"^\s*rank\b", tags, re.M):
        fail(f"ddp: pprof -tags lacks pid or rank: {tags[:400]!r}")

    # Folded input: "main;foo 10" keeps both frames (the first was taken for the program's label).
    base = os.path.join(tmp, "plain")
    with open(base + ".folded", "w") as f:
        f.write("main;foo 10\n")
    report([base + ".folded", "-o", base + ".pb.gz"])
    got = traces(pprof(["-traces"], base + ".pb.gz"))
    if got != [(10, ["foo", "main"])]:
        fail(f"folded 'main;foo 10': pprof -traces gives {got}")
    else:
        print("go_pprof folded input: main;foo 10 reads back as main -> foo, 10 samples")


with tempfile.TemporaryDirectory() as tmp:
    user_checks(tmp)
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
