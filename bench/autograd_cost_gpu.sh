#!/usr/bin/env bash
# Issue #23 item 5 on the GPU machine: what the autograd tracking adds to the launch path, as a user
# sees it (the summary's "stack capture cost", no breakdown timing in it). Each round runs three
# recordings of one workload, in an order that rotates from round to round:
#   new0  this tree's build (B) with AIFLAME_AUTOGRAD=0 (no tracking: the baseline)
#   new1  this tree's build with the tracking (the default)
#   old1  the previous build (A) with the tracking, when A has one
# and prints per run the capture cost and the backward launch count, then per workload the paired
# differences new1 - new0 and old1 - new0 (median [range]). A round's three runs share the host, so
# the pairs cancel most of its drift (plain loop times moved 20-40% between rounds on these hosts).
#
# Usage: bench/autograd_cost_gpu.sh [ROUNDS=5]
# Env:   A (.dist/old), B (.dist), WORKLOADS ("gpt_train resnet_train hf_gpt2"), STEPS_gpt_train (100),
#        STEPS_resnet_train (20), STEPS_hf_gpt2 (30), OUT (a temporary directory)
set -u
rounds=${1:-5}
a=${A:-.dist/old}
b=${B:-.dist}
workloads=${WORKLOADS:-gpt_train resnet_train hf_gpt2}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
variants="new0 new1"
[ -x "$a/aiflame" ] && variants="new0 new1 old1"
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # variant workload round
  local v=$1 w=$2 r=$3 bin=$b ag=1 steps log cost bw
  case $v in new0) ag=0 ;; old1) bin=$a ;; esac
  steps_var="STEPS_$w"
  steps=${!steps_var:-}
  [ -z "$steps" ] && case $w in gpt_train) steps=100 ;; resnet_train) steps=20 ;; *) steps=30 ;; esac
  log=$(AIFLAME_AUTOGRAD=$ag timeout -k 5 120 "$bin/aiflame" record -f --sass-timeout 0 -o "$out/ag.aiflame" -- \
          env STEPS="$steps" python3 "bench/workloads/$w.py" 2>&1)
  cost=$(grep -o 'stack capture cost [0-9.]*' <<<"$log" | grep -o '[0-9.]*$')
  bw=$(grep -o '[0-9]* backward launches' <<<"$log" | grep -o '^[0-9]*')
  echo "$w r$r $v cost_us=${cost:-?} backward_launches=${bw:-0}" | tee -a "$out/lines"
}
for w in $workloads; do
  for ((r = 0; r < rounds; r++)); do
    set -- $variants
    n=$#
    for ((k = 0; k < n; k++)); do
      i=$(( (k + r) % n + 1 ))
      run "${!i}" "$w" "$r"
    done
  done
done
python3 - "$out/lines" <<'PY'
import collections, re, statistics, sys
cost = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) r(\d+) (\S+) cost_us=([0-9.]+)", l)
    if m:
        cost[(m[1], int(m[2]))][m[3]] = float(m[4])
def f(v):
    return "%+.3f [%+.3f, %+.3f] (%d rounds)" % (statistics.median(v), min(v), max(v), len(v)) if v else "-"
for w in sorted({k[0] for k in cost}):
    rows = [c for (ww, _), c in sorted(cost.items()) if ww == w]
    base = [c["new0"] for c in rows if "new0" in c]
    print("%s: capture cost without tracking (new0) median %.3f us" % (w, statistics.median(base)) if base else w)
    for v in ("new1", "old1"):
        d = [c[v] - c["new0"] for c in rows if v in c and "new0" in c]
        if d:
            print("  %s - new0: %s us per launch" % (v, f(d)))
PY
