#!/usr/bin/env bash
# Does pinning the program to a few cores narrow the loop time's spread on the GPU machine (issue #24:
# plain hf_gpt2.py loops moved 0.87-1.55 s between runs of one call, more than the budgets to test)?
# ROUNDS rounds of three runs in a rotating order: plain unpinned, plain pinned (taskset -c $CPUS),
# recorded at the defaults pinned. Prints each run's loop_s, then per kind the median, range and
# spread (max/min), and the recorded run's ratio to the pinned plain run of its round.
# Usage: bench/pin_noise_gpu.sh [ROUNDS=5]   Env: WORKLOAD (hf_gpt2), STEPS (30), CPUS (4-7), AIFLAME_BIN (.dist)
set -u
rounds=${1:-5}
w=${WORKLOAD:-hf_gpt2}
cpus=${CPUS:-4-7}
bin=${AIFLAME_BIN:-.dist}
out=$(mktemp -d)
loop_of() { grep -o 'loop_s [0-9.]*' "$1" | awk '{print $2}'; }
run() {  # kind
  case $1 in
    plain) env STEPS="${STEPS:-30}" python3 "bench/workloads/$w.py" >"$out/log" 2>&1 ;;
    pinned) taskset -c "$cpus" env STEPS="${STEPS:-30}" python3 "bench/workloads/$w.py" >"$out/log" 2>&1 ;;
    recorded) taskset -c "$cpus" "$bin/aiflame" record -f -q --sass-timeout 0 -o "$out/r.aiflame" -- \
                env STEPS="${STEPS:-30}" python3 "bench/workloads/$w.py" >"$out/log" 2>&1 ;;
  esac
  echo "$(loop_of "$out/log")"
}
kinds=(plain pinned recorded)
for r in $(seq 1 "$rounds"); do
  line="round $r:"
  for i in 0 1 2; do
    k=${kinds[$(( (i + r) % 3 ))]}
    v=$(run "$k")
    echo "$r $k $v" >>"$out/all"
    line="$line $k=$v"
  done
  echo "$line"
done
python3 - "$out/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
by = {}
for r, k, v in rows:
    by.setdefault(k, {})[r] = float(v)
for k, d in by.items():
    v = sorted(d.values())
    print(f"{k}: median {statistics.median(v):.3f} s, range [{v[0]:.3f}, {v[-1]:.3f}], spread {v[-1] / v[0]:.3f}")
if "recorded" in by and "pinned" in by:
    ratios = sorted(by["recorded"][r] / by["pinned"][r] for r in by["recorded"] if r in by["pinned"])
    print(f"recorded/pinned plain, by round: median {statistics.median(ratios):.3f} [{ratios[0]:.3f}, {ratios[-1]:.3f}] over {len(ratios)} rounds")
PY
rm -rf "$out"
