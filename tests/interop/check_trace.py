#!/usr/bin/env python3
"""Strict structure of aiflame's Chrome/Perfetto trace (.trace.json), on every recorded fixture.

No Perfetto or catapult trace reader installs offline (not in Debian; npm has none; PyPI's `perfetto`
is not reachable here), and the catapult viewer that Chromium shipped as chrome://tracing is gone from
Debian's Chromium 156 (navigating there fails with ERR_FAILED even with internal debugging pages
enabled, checked 2026-11-24), so this checks what those readers rely on, per the Trace Event Format
(docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU) and Perfetto's JSON
importer:
- every `sf` and every stackFrames `parent` names a node of `stackFrames`; parents come first (no
  cycle); a node's category is a frame kind;
- every flow id has exactly one `s` and one `f`; the `s` lies inside a launch slice (`X`, cat launch)
  of its pid/tid; the `f` (`bp: e`) lies inside a kernel slice of its pid/tid;
- pids are the recorded processes' pids (never 0); launch tids are real thread ids (0 < tid < 2^22,
  Linux's largest pid_max); GPU tracks use tids >= 10^9; every track has a name;
- every kernel of the profile is one kernel slice, and their samples add up to the samples
  attributed to a launch stack (the folded output's stacks with a "-" separator);
- with launch records, every kernel is joined to its launch by a flow; no kernel repeats its
  launch stack in its args (they are interned);
- launch slices are named after the driver call and the user's frame that made it
  ("cuLaunchKernel from step (gpt_train.py:19)"), not after the innermost CPU frame (a libcudart
  address on every slice before); their durations are the recorded call's where the profile has them.

Usage: check_trace.py AIFLAME SOURCE_DIR [PROFILE...] (default: every fixture of tests/data).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

AIFLAME, SRC = sys.argv[1], sys.argv[2]
KINDS = {"process", "python", "native", "runtime", "separator", "gpu_kernel", "gpu_source", "gpu_instruction",
         "stall", "unattributed"}
failures = []


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)


def check(name, trace, folded_lines):
    ev = trace["traceEvents"]
    frames = trace.get("stackFrames", {})
    # stackFrames: a forest, parents first.
    for k, node in frames.items():
        if node.get("category") not in KINDS:
            fail(f"{name}: stackFrames[{k}] category {node.get('category')!r}")
        if "parent" in node and (str(node["parent"]) not in frames or int(node["parent"]) >= int(k)):
            fail(f"{name}: stackFrames[{k}] parent {node['parent']} does not resolve before it")
    for e in ev:
        if "sf" in e and str(e["sf"]) not in frames:
            fail(f"{name}: sf {e['sf']} of {e.get('name')} is not in stackFrames")
        if "launch_stack" in e.get("args", {}):
            fail(f"{name}: {e.get('name')} repeats its launch stack in args")
    # Processes and tracks.
    pids_recorded = {int(l.split(";")[1]) for l in folded_lines if l.split(";")[1].isdigit()}
    named_procs = {e["pid"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
    named_threads = {(e["pid"], e["tid"]) for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    slices = [e for e in ev if e.get("ph") == "X"]
    kernels = [e for e in slices if e.get("cat") == "kernel"]
    launches = [e for e in slices if e.get("cat") == "launch"]
    for e in ev:
        if e.get("ph") == "M":
            continue
        if not e.get("pid"):
            fail(f"{name}: event {e.get('name')} has pid {e.get('pid')}")
        elif pids_recorded and e["pid"] not in pids_recorded:
            fail(f"{name}: pid {e['pid']} is none of the recorded pids {sorted(pids_recorded)}")
        if e["pid"] not in named_procs:
            fail(f"{name}: pid {e['pid']} has no process_name")
    for e in kernels:
        if e["tid"] < 10**9 or (e["pid"], e["tid"]) not in named_threads:
            fail(f"{name}: kernel {e['name']} on tid {e['tid']} (not a named GPU track)")
    for e in launches:
        if not (0 < e["tid"] < 2**22) or (e["pid"], e["tid"]) not in named_threads:
            fail(f"{name}: launch slice on tid {e['tid']} (not a named launching thread)")
        if "sf" not in e:
            fail(f"{name}: launch slice {e['name']} without its stack")
        if not re.match(r"^cu[A-Za-z]+(_ptsz)?( from .+)?$", e["name"]):
            fail(f"{name}: launch slice named {e['name']!r}, not after its driver call")
    named_from = sum(1 for e in launches if " from " in e["name"])
    if launches and named_from < len(launches) / 2:
        fail(f"{name}: only {named_from} of {len(launches)} launch slices name the frame that made the call")
    # Flows.
    by_track = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"], e["cat"]), []).append(e)
    ends = {}
    for e in ev:
        if e.get("ph") in ("s", "f"):
            ends.setdefault(e["id"], []).append(e)

    def inside(e, cat):
        return any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in by_track.get((e["pid"], e["tid"], cat), []))

    for fid, es in ends.items():
        phs = sorted(x["ph"] for x in es)
        if phs != ["f", "s"]:
            fail(f"{name}: flow {fid} has ends {phs}")
            continue
        s = next(x for x in es if x["ph"] == "s")
        f = next(x for x in es if x["ph"] == "f")
        if not inside(s, "launch"):
            fail(f"{name}: flow {fid} starts outside any launch slice of pid {s['pid']} tid {s['tid']}")
        if f.get("bp") != "e" or not inside(f, "kernel"):
            fail(f"{name}: flow {fid} ends outside any kernel slice of pid {f['pid']} tid {f['tid']}")
    if launches and len(ends) != len(kernels):
        fail(f"{name}: {len(ends)} flows for {len(kernels)} kernels")
    # Samples.
    attributed = sum(int(l.rpartition(" ")[2]) for l in folded_lines if ";-;" in l)
    got = sum(e["args"]["samples"] for e in kernels)
    if got != attributed:
        fail(f"{name}: kernel slices hold {got} samples, {attributed} were attributed to launch stacks")
    return len(kernels), len(launches), len(ends), len(frames)


with tempfile.TemporaryDirectory() as tmp:
    inputs = sys.argv[3:] or sorted(glob.glob(os.path.join(SRC, "tests/data/*.aiflame"))) + [os.path.join(SRC, "tests/data/ddp")]
    for path in inputs:
        name = os.path.basename(path)
        base = os.path.join(tmp, name)
        subprocess.run([AIFLAME, "report", path, "-q", "-o", base + ".trace.json"], check=True)
        subprocess.run([AIFLAME, "report", path, "-q", "--plain", "-o", base + ".folded"], check=True)
        with open(base + ".trace.json") as f:
            trace = json.load(f)
        with open(base + ".folded") as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
        k, l, fl, nodes = check(name, trace, lines)
        print(f"trace {name}: {os.path.getsize(base + '.trace.json')} bytes, {k} kernels, {l} launch slices, "
              f"{fl} flows, {nodes} stack nodes")

print(f"trace: {len(failures)} failed")
sys.exit(1 if failures else 0)
