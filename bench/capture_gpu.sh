#!/usr/bin/env bash
# Stack capture cost per launch on the GPU machine (issue #22): `aiflame record` at default settings
# (every launch unwound) on three training loops, each run RUNS times, printing for every run the
# summary's "stack capture cost" (us per launch, measured by the recorder around its capture on the
# launching threads), the launch count, how many were unwound, the number of distinct stacks and
# loop_s; then the median per workload. Budget: <= 0.5 us per launch.
#
# Usage: bench/capture_gpu.sh [RUNS=3] [WORKLOAD...]   workloads: gpt hf_gpt2 resnet (default: all)
# Env:   AIFLAME_BIN (directory with aiflame and libaiflame_cupti.so; default .dist), OUT (scratch,
#        default /tmp/aiflame_capture), RECORD_OPTS (extra options for aiflame record), STEPS (steps
#        of every workload; default: each workload's own).
# Run from the repository root on a machine with a GPU, CUDA, PyTorch (and transformers and
# torchvision for hf_gpt2 and resnet).
set -u
runs=${1:-3}
shift || true
workloads=${*:-gpt hf_gpt2 resnet}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp/aiflame_capture}
mkdir -p "$out"
export PYTHONUNBUFFERED=1

script_of() {
  case $1 in
    gpt) echo bench/workloads/gpt_train.py ;;
    hf_gpt2) echo bench/workloads/hf_gpt2.py ;;
    resnet) echo bench/workloads/resnet_train.py ;;
    *) echo "unknown workload $1" >&2; return 1 ;;
  esac
}
num() { grep -o "$1" "$2" | tail -1 | grep -o '[0-9][0-9.]*' | head -"${3:-1}" | tail -1; }
median() { sort -g | awk '{v[NR]=$1} END{if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2); else print "n/a"}'; }

echo "# stack capture cost per launch ($(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)})"
printf '%-8s %4s %12s %10s %10s %8s %8s\n' workload run capture_us launches unwound stacks loop_s
for w in $workloads; do
  script=$(script_of "$w") || exit 2
  : >"$out/$w.costs"
  for r in $(seq 1 "$runs"); do
    log=$out/${w}_$r.log
    # The first run traces (AIFLAME_DEBUG=1) which objects' rows were built, how long they took, and
    # how many launches fell back to backtrace() meanwhile; printed after the table.
    # shellcheck disable=SC2086
    env ${STEPS:+STEPS=$STEPS} $([ "$r" = 1 ] && echo AIFLAME_DEBUG=1) \
      "$bin/aiflame" record --force ${RECORD_OPTS:-} -o "$out/$w.aiflame" -- python3 "$script" >"$log" 2>&1
    rc=$?
    cost=$(num 'stack capture cost [0-9.]*' "$log")
    launches=$(num '[0-9]* launches ([0-9]* unwound)' "$log" 1)
    unwound=$(num '[0-9]* launches ([0-9]* unwound)' "$log" 2)
    stacks=$(num '[0-9]* stacks' "$log")
    loop=$(num 'loop_s [0-9.]*' "$log")
    printf '%-8s %4s %12s %10s %10s %8s %8s%s\n' "$w" "$r" "${cost:-n/a}" "${launches:-n/a}" "${unwound:-n/a}" \
      "${stacks:-n/a}" "${loop:-n/a}" "$([ "$rc" = 0 ] || echo "  (exit $rc, see $log)")"
    [ -n "$cost" ] && echo "$cost" >>"$out/$w.costs"
  done
done
echo
for w in $workloads; do
  log=$out/${w}_1.log
  echo "$w, run 1: rows built (largest 5 by CPU time), and the last count of launches that fell back:"
  grep -o 'unwind rows of .*' "$log" | awk '{print $(NF-2), $0}' | sort -g -r | head -5 | cut -d' ' -f2- | sed 's/^/  /'
  grep -o 'launch stack from backtrace(), [0-9]* so far.*' "$log" | tail -1 | sed 's/^/  /'
done
echo
for w in $workloads; do
  m=$(median <"$out/$w.costs")
  verdict=$(awk -v m="$m" 'BEGIN{print (m != "n/a" && m <= 0.5) ? "within" : "OVER"}')
  echo "$w: median stack capture cost $m us per launch ($verdict the 0.5 us budget)"
done
