#!/usr/bin/env bash
# A torchrun DDP job recorded on two H200s (tests/data/ddp: torchrun's agent, rank 0, rank 1):
# merged by directory, grouped by rank and by device, against a golden file.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$AIFLAME" report "$SRC/tests/data/ddp" --group-by rank --plain --no-native -o "$T/rank.folded" 2>"$T/err"
check "report exits 0" '[ $? -eq 0 ]'
golden=$SRC/tests/data/ddp_rank.folded
[ -n "${AIFLAME_UPDATE_GOLDEN:-}" ] && cp "$T/rank.folded" "$golden"
check "matches $golden" 'cmp -s "$T/rank.folded" "$golden"'
check "one row per process" '[ "$(grep -c "samples (" "$T/err")" -eq 3 ]'
check "rank rows" 'grep -q "rank 0 (pid 607)" "$T/err" && grep -q "rank 1 (pid 608)" "$T/err"'
check "imbalance line compares the two ranks only" 'grep -q "GPU busy from 1.8% (rank 0) to 2.3% (rank 1)" "$T/err"'
check "roots are the ranks" '[ "$(cut -d";" -f1 "$T/rank.folded" | sort -u | tr "\n" " ")" = "rank 0 rank 1 " ]'
sum() { awk -v r="$1" -F';' '$1 == r { n = split($0, a, " "); s += a[n] } END { print s + 0 }' "$T/rank.folded"; }
check "rank 0 keeps its 1801 samples" '[ "$(sum "rank 0")" -eq 1801 ]'
check "rank 1 keeps its 1725 samples" '[ "$(sum "rank 1")" -eq 1725 ]'
for r in 0 1; do
  check "rank $r: kernels under the rank's Python stack" \
    'grep "^rank $r;" "$T/rank.folded" | grep -q "^rank $r;<module> (gpt_ddp.py:[0-9]*);main (gpt_ddp.py:[0-9]*);.*;-;"'
done

"$AIFLAME" report "$SRC/tests/data/ddp" --group-by device -q -o "$T/device.folded"
check "roots are the GPUs" '[ "$(cut -d";" -f1 "$T/device.folded" | sort -u | tr "\n" " ")" = "GPU 0 GPU 1 " ]'
"$AIFLAME" report "$SRC/tests/data/ddp" -q -o "$T/process.folded"
check "default roots are program;pid" '[ "$(cut -d";" -f1-2 "$T/process.folded" | sort -u | tr "\n" " ")" = "python;607 python;608 " ]'
check "NCCL kernels sampled under NCCL's launch" 'grep -q "ncclLaunchKernel;-;ncclDevKernel_" "$T/process.folded"'
# DDP's gradient all-reduce runs on autograd's engine thread (native frames only, from c10d's reducer);
# this sparse fixture caught no sample of it, but the trace holds every all-reduce with its launch stack.
"$AIFLAME" report "$SRC/tests/data/ddp" -q -o "$T/ddp.trace.json"
check "all-reduce kernels of both ranks launched from c10d's reducer" \
  'python3 - "$T/ddp.trace.json" <<PY
import json, sys
doc = json.load(open(sys.argv[1]))
ev, frames = doc["traceEvents"], doc["stackFrames"]
def stack(sf):  # the interned launch stack, leaf first
    out, k = [], str(sf)
    while k in frames:
        out.append(frames[k]["name"])
        k = str(frames[k].get("parent", ""))
    return out
ar = [e for e in ev if "AllReduce" in e.get("name", "") and e.get("ph") == "X"]
pids = {e["pid"] for e in ar}
ok = len(ar) > 0 and pids == {607, 608} and all("c10d::Reducer::run_allreduce_hook" in stack(e["sf"]) for e in ar)
sys.exit(0 if ok else 1)
PY'
# diff compares processes by program, not pid (issue #26): the two ranks share their launch stacks and
# kernels; grouped by rank they share nothing, and diff says so in one line.
"$AIFLAME" diff "$SRC/tests/data/ddp/ddp.aiflame.607" "$SRC/tests/data/ddp/ddp.aiflame.608" -o "$T/d.folded" 2>"$T/derr"
check "diff of two ranks: no note, roots are the program" \
  '! grep -q "share little" "$T/derr" && [ "$(cut -d";" -f1 "$T/d.folded" | sort -u)" = python ]'
"$AIFLAME" diff "$SRC/tests/data/ddp/ddp.aiflame.607" "$SRC/tests/data/ddp/ddp.aiflame.608" --group-by rank -o "$T/r.folded" 2>"$T/derr"
check "diff grouped by rank: one note" '[ "$(grep -c "share little: 0.0%" "$T/derr")" -eq 1 ]'
finish multi_rank
