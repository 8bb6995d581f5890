#!/usr/bin/env bash
# Repeated recorded DDP runs (issue #7: one rank died of SIGSEGV in 1 of 16 earlier runs), on a
# machine with two GPUs, at default settings: `aiflame record -- torchrun --nproc_per_node=2 gpt_ddp.py`
# up to RUNS times or until BUDGET_S seconds have passed. Per run: torchrun's exit status, each rank's
# "loop_s" line and aiflame's per-process summary; any run whose exit status is not 0 keeps its stderr.
# Ends with "runs N, clean C, crashed K". Exit status 1 when a run crashed.
# Usage: bench/ddp_repeat.sh [RUNS [STEPS]]     Env: AIFLAME_BIN (default .dist), OUT (default /tmp),
#        BUDGET_S (default 480), RECORD_OPTS (extra options for aiflame record).
set -u
runs=${1:-16}
steps=${2:-50}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
budget=${BUDGET_S:-480}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# A crashing rank prints its Python stack (faulthandler); aiflame itself runs at its defaults.
export PYTHONFAULTHANDLER=1
start=$(date +%s)
n=0 clean=0 crashed=0
for i in $(seq 1 "$runs"); do
  [ $(( $(date +%s) - start )) -lt "$budget" ] || break
  rm -rf "$out/ddp$i" && mkdir -p "$out/ddp$i"
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  STEPS=$steps "$bin/aiflame" record ${RECORD_OPTS:-} --force -o "$out/ddp$i/ddp.aiflame" -- \
    torchrun --standalone --nproc_per_node=2 bench/workloads/gpt_ddp.py >"$out/ddp$i/out" 2>"$out/ddp$i/err"
  rc=$?
  n=$((n + 1))
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  loops=$(grep -o 'rank [0-9] steps [0-9]* loop_s [0-9.]*' "$out/ddp$i/out" | sed 's/ steps [0-9]*//' | tr '\n' ' ')
  if [ "$rc" -eq 0 ] && ! grep -q 'cut short\|Segmentation fault\|SIGSEGV' "$out/ddp$i/err"; then
    clean=$((clean + 1)); verdict=clean
  else
    crashed=$((crashed + 1)); verdict="CRASH (exit $rc)"
  fi
  printf 'run %2d: %s, %d.%d s, %s\n' "$i" "$verdict" $((ms / 1000)) $((ms % 1000 / 100)) "$loops"
  grep '^aiflame:   \|the program ran\|nvdisasm\|SASS' "$out/ddp$i/err" | sed 's/^/    /'
  if [ "$verdict" != clean ]; then grep -v '^aiflame:   ' "$out/ddp$i/err" | tail -30 | sed 's/^/    | /'; fi
done
echo "runs $n, clean $clean, crashed $crashed ($(( $(date +%s) - start )) s)"
[ "$crashed" -eq 0 ]
