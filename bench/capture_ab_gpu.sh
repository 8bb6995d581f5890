#!/usr/bin/env bash
# The launch path's cost on the GPU machine, two builds side by side (issue #22/#23): each training
# loop recorded with build A and build B, alternating (A B, B A, ...) so that both see the same host.
# ROUNDS runs per build with AIFLAME_CAPTURE_STATS=1 (the breakdown by part), then PLAIN_ROUNDS
# without it (the summary's "stack capture cost" as a user sees it). Prints every line, then the
# medians (ranges) per workload and build.
#
# Usage: bench/capture_ab_gpu.sh [ROUNDS=2] [PLAIN_ROUNDS=1]
# Env:   A, B (directories with aiflame and libaiflame_cupti.so; default .dist/old and .dist),
#        STEPS (100), WORKLOADS ("gpt_train hf_gpt2 resnet_train", from bench/workloads/).
set -u
rounds=${1:-2}
plain_rounds=${2:-1}
a=${A:-.dist/old}
b=${B:-.dist}
steps=${STEPS:-100}
workloads=${WORKLOADS:-gpt_train hf_gpt2 resnet_train}
out=$(mktemp -d)
run() {  # build stats workload
  local bin=$1 stats=$2 w=$3 log
  log=$(AIFLAME_CAPTURE_STATS=$stats "$bin/aiflame" record -f --sass-timeout 0 -o "$out/x.aiflame" -- \
          env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
  local cost breakdown
  cost=$(grep -o 'stack capture cost [0-9.]* us' <<<"$log" | grep -o '[0-9.]*')
  breakdown=$(grep 'capture stats' <<<"$log")
  echo "$w build=$bin stats=$stats cost=${cost:-?} ${breakdown:-}" | tee -a "$out/lines"
}
for w in $workloads; do
  for r in $(seq 1 $((rounds + plain_rounds))); do
    stats=1; (( r > rounds )) && stats=0
    if (( r % 2 )); then order="$a $b"; else order="$b $a"; fi
    for bin in $order; do run "$bin" "$stats" "$w"; done
  done
done
python3 - "$out/lines" <<'PY'
import re, statistics, sys
runs = {}
parts = ["total", "python walk", "native unwind", "hash and local lookup", "shared intern", "autograd", "launch record write"]
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) build=(\S+) stats=(\d) cost=(\S+)", l)
    if not m:
        continue
    key = (m[1], m[2])
    r = runs.setdefault(key, {"cost0": [], "cost1": [], **{p: [] for p in parts}})
    if m[4] != "?":
        r["cost" + m[3]].append(float(m[4]))
    for p in parts:
        pm = re.search(re.escape(p) + r" ([0-9.]+)", l)
        if pm and m[3] == "1":
            r[p].append(float(pm[1]))
    mm = re.search(r"([0-9.]+)% of launches from their path's memo", l)
    if mm:
        r.setdefault("memo %", []).append(float(mm[1]))
def f(v):
    return "%.3f (%.3f-%.3f)" % (statistics.median(v), min(v), max(v)) if v else "-"
for (w, b), r in sorted(runs.items()):
    print("%-13s %-10s summary cost: %s without stats, %s with" % (w, b, f(r["cost0"]), f(r["cost1"])))
    print("  " + "; ".join("%s %s" % (p, f(r[p])) for p in parts + ["memo %"] if r.get(p)))
PY
rm -rf "$out"
