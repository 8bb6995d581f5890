#!/usr/bin/env python3
"""FlameScope's own perf-script parser reads aiflame's .stacks as FlameScope would.

Runs perf_generate_flame_graph() of a FlameScope checkout (app/perf/flame_graph.py with its
regexp.py, libtype.py, fileutil.py and config.py, unchanged; the Flask app in app/__init__.py is not
loaded) on our .stacks of the fixtures and requires its tree to be our folded output: every path
from the root with the same samples, names whole (perf's "+0x" offset cut and "->" inline split
leave ours alone: "[libstdc++.so.6+0xecdb3]" stays one name, not "[libstdc"), and frames typed by
what they are: Python "jit", GPU "kernel", other CPU code "user", aiflame's labels untyped.

Usage: check_flamescope.py AIFLAME SOURCE_DIR, with FLAMESCOPE_DIR set to a checkout of
github.com/Netflix/flamescope (checked with be26595, 2022-04-21) and Debian's python3-flask,
python3-magic and python3-cachetools. Exit 77 (skip) without them unless AIFLAME_REQUIRE_FLAMESCOPE.
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import types

AIFLAME, SRC = sys.argv[1], sys.argv[2]
FS = os.environ.get("FLAMESCOPE_DIR", "")
FIXTURES = ["demo_matmul.aiflame", "gpt_train.aiflame", "iaprof_current.txt"]


def skip(msg):
    if os.environ.get("AIFLAME_REQUIRE_FLAMESCOPE"):
        print("FAIL flamescope: " + msg)
        sys.exit(1)
    print("SKIP flamescope: " + msg)
    sys.exit(77)


if not FS or not os.path.isfile(os.path.join(FS, "app/perf/flame_graph.py")):
    skip("set FLAMESCOPE_DIR to a checkout of github.com/Netflix/flamescope")

# The package `app` without running app/__init__.py (the Flask app and its PyPI-only imports): its
# submodules are loaded from their files as they are.
pkg = types.ModuleType("app")
pkg.__path__ = [os.path.join(FS, "app")]
sys.modules["app"] = pkg
try:
    spec = importlib.util.spec_from_file_location("app.config", os.path.join(FS, "app/config.py"))
    config = importlib.util.module_from_spec(spec)
    sys.modules["app.config"] = config
    spec.loader.exec_module(config)
    pkg.config = config
    from app.perf.flame_graph import perf_generate_flame_graph
except ImportError as e:
    skip(f"FlameScope's parser does not import ({e}); apt-get install -y python3-flask python3-magic python3-cachetools")

failures = []


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)


def comm_of(name):
    return re.match(r"^ *([^0-9]+)", name).group(1).rstrip()  # FlameScope's comm_regexp


def our_name(frame):
    return frame.replace("+", "\uff0b").replace("->", "-\uff1e")


def kind_of(frame):
    """(name, FlameScope type wanted) of an annotated folded frame (py::, _[G], _[g]: iaprof's)."""
    if frame.startswith("py::"):
        return frame[4:], "jit"
    if frame.endswith("_[G]") or frame.endswith("_[g]"):
        return frame[:-4], "kernel"
    if frame in ("-", "[unattributed]"):
        return frame, ""
    return frame, "user"


def subtree_totals(node, path, out):
    total = node["v"]
    for c in node["c"]:
        total += subtree_totals(c, path + ((c["n"], c["l"]),), out)
    if path:
        out[path] = out.get(path, 0) + total
    return total


with tempfile.TemporaryDirectory() as tmp:
    config.PROFILE_DIR = tmp
    for fixture in FIXTURES:
        base = os.path.join(tmp, fixture.replace(".", "_"))
        for ext, extra in ((".stacks", []), (".folded", ["--annotate"])):
            subprocess.run([AIFLAME, "report", os.path.join(SRC, "tests/data", fixture), "-q", "-o", base + ext] + extra,
                           check=True)
        root = perf_generate_flame_graph(base + ".stacks")
        got = {}
        got_total = subtree_totals(root, (), got)
        want, want_total = {}, 0
        with open(base + ".folded") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                frames, n = stack.split(";"), int(count)
                if n == 0:
                    continue
                want_total += n
                # The writer puts the program and pid frames on the event line; FlameScope makes the
                # comm the root frame.
                comm, frames = frames[0], frames[2:] if len(frames) > 1 and frames[1].isdigit() else frames[1:]
                path = ((comm_of(comm), ""),)
                want[path] = want.get(path, 0) + n
                for fr in frames:
                    name, libtype = kind_of(fr)
                    path += ((our_name(name), libtype),)
                    want[path] = want.get(path, 0) + n
        if got_total != want_total:
            fail(f"{fixture}: FlameScope's tree has {got_total} samples, the folded output {want_total}")
        if got != want:
            missing = [p for p in want if got.get(p) != want[p]]
            extra = [p for p in got if p not in want]
            fail(f"{fixture}: {len(missing)} paths differ, {len(extra)} only in FlameScope's tree; first: "
                 f"{missing[:1]} {extra[:1]}")
        if fixture == "gpt_train.aiflame" and ("[libstdc\uff0b\uff0b.so.6\uff0b0xecdb3]", "user") not in {
                p[-1] for p in got}:
            fail("gpt_train: [libstdc++.so.6+0xecdb3] is not one frame in FlameScope's tree")
        types_seen = sorted({p[-1][1] for p in got})
        print(f"flamescope {fixture}: {got_total} samples, {len(got)} tree nodes, types {types_seen}")

print(f"flamescope: {len(failures)} failed")
sys.exit(1 if failures else 0)
