#!/usr/bin/env bash
# Overhead of `aiflame record` on the GPU machine: plain and recorded runs alternate (A B A B ...),
# and the table gives the median, min and max of the per-pair ratios of
#   - total wall time (what a user waits for, symbolizing the profile included),
#   - the program's own run time under aiflame (until it exits, before symbolizing),
#   - the workload's own launch-loop time (loop_s), which leaves out CUDA/CUPTI start and exit,
# and, from the recorded runs (medians): GPU samples/s, profile MB/s, peak RSS added over the
# plain run, CPU seconds added (all threads: the program's, CUPTI's and aiflame's) and the CPU of
# aiflame's collector thread.
#
# Usage: bench/overhead.sh [PAIRS=5] [WORKLOAD...]
#   workloads: demo gpt storm threads graph triton (default: all)
# Env:   AIFLAME_BIN (directory with aiflame, libaiflame_cupti.so, aiflame_demo_matmul,
#        aiflame_bench_kernels; default .dist), RECORD_OPTS (extra options for aiflame record),
#        STEPS (gpt_train.py steps, default 100), OUT (scratch dir), COMMIT, DEVICE (for the header).
# Writes the table to stdout and to $OUT/overhead.md (with date, device and commit).
set -u
pairs=${1:-5}
shift || true
workloads=${*:-demo gpt storm threads graph triton}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
gpt_steps=${STEPS:-100}

now() { date +%s.%N; }
calc() { awk "BEGIN{print $1}"; }
# shellcheck source=bench/stats.sh
source "$(dirname "$0")/stats.sh"
field() { grep -o "$1" "$2" | tail -1 | grep -o '[0-9.]*' | head -"${3:-1}" | tail -1; }

command_of() {
  case $1 in
    demo) echo "$bin/aiflame_demo_matmul 200" ;;
    gpt) echo "env STEPS=$gpt_steps python3 bench/workloads/gpt_train.py" ;;
    storm) echo "$bin/aiflame_bench_kernels storm 1000000" ;;
    threads) echo "$bin/aiflame_bench_kernels threads 8 20000" ;;
    graph) echo "$bin/aiflame_bench_kernels graph 20000 10" ;;
    triton) echo "env STEPS=20000 python3 bench/workloads/triton_loop.py" ;;
    *) echo "unknown workload $1" >&2; return 1 ;;
  esac
}

# run_one WORKLOAD MODE -> "wall loop program user sys rss samples_s mb_s collector_s"
run_one() {
  local w=$1 mode=$2 log=$out/run_$1_$2.log cmd
  read -r -a cmd <<<"$(command_of "$w")"
  local t0 t1
  t0=$(now)
  if [ "$mode" = plain ]; then
    python3 bench/rusage.py "${cmd[@]}" >"$log" 2>&1
  else
    # shellcheck disable=SC2086
    "$bin/aiflame" record --force ${RECORD_OPTS:-} -o "$out/bench_$w.aiflame" -- "${cmd[@]}" >"$log" 2>&1
  fi
  t1=$(now)
  local wall loop prog user sys rss sps mbs col
  wall=$(calc "$t1 - $t0")
  loop=$(field 'loop_s [0-9.]*' "$log")
  prog=$(field 'the program ran [0-9.]*' "$log")
  user=$(field 'CPU [0-9.]* s user' "$log")
  sys=$(field '[0-9.]* s system' "$log")
  rss=$(field 'peak RSS [0-9]*' "$log")
  sps=$(field '[0-9]* GPU samples/s' "$log")
  mbs=$(field '([0-9.]* MB/s)' "$log")
  col=$(field 'collector thread used [0-9.]*' "$log")
  echo "$wall ${loop:-0} ${prog:-$wall} ${user:-0} ${sys:-0} ${rss:-0} ${sps:-0} ${mbs:-0} ${col:-0}"
}

{
  echo "Date $(date -u +%Y-%m-%d), device ${DEVICE:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)}, commit ${COMMIT:-unknown}, $pairs pairs, RECORD_OPTS='${RECORD_OPTS:-}'"
  echo
  printf '| workload | plain s | recorded s (program s) | total wall ratio | program ratio | loop ratio | GPU samples/s | MB/s | RSS added MB | CPU added s | collector CPU s |\n'
  printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
} | tee "$out/overhead.md"
for w in $workloads; do
  command_of "$w" >/dev/null || continue
  run_one "$w" plain >/dev/null  # warm caches (files, GPU clocks, Triton's compile cache)
  for f in wall prog loop pw rw rp sps mbs rss cpu col; do : >"$out/r_$f"; done
  for i in $(seq "$pairs"); do
    read -r pw pl _ pu psy prss _ _ _ < <(run_one "$w" plain)
    read -r rw rl rp ru rsy rrss sps mbs col < <(run_one "$w" record)
    echo "$pw" >>"$out/r_pw"; echo "$rw" >>"$out/r_rw"; echo "$rp" >>"$out/r_rp"
    calc "$rw / $pw" >>"$out/r_wall"
    calc "$rp / $pw" >>"$out/r_prog"
    if [ "$pl" != 0 ] && [ "$rl" != 0 ]; then calc "$rl / $pl" >>"$out/r_loop"; fi
    echo "$sps" >>"$out/r_sps"; echo "$mbs" >>"$out/r_mbs"; echo "$col" >>"$out/r_col"
    calc "$rrss - $prss" >>"$out/r_rss"
    calc "$ru + $rsy - $pu - $psy" >>"$out/r_cpu"
    echo "pair $i $w: plain $pw s (loop $pl, rss $prss MB) recorded $rw s (program $rp s, loop $rl, rss $rrss MB, $sps samples/s)" >&2
  done
  loopcol=-
  [ -s "$out/r_loop" ] && loopcol=$(stats "$out/r_loop")
  printf '| %s | %.2f | %.2f (%.2f) | %s | %s | %s | %.0f | %.3f | %.0f | %.2f | %.3f |\n' "$w" "$(median <"$out/r_pw")" \
    "$(median <"$out/r_rw")" "$(median <"$out/r_rp")" "$(stats "$out/r_wall")" "$(stats "$out/r_prog")" "$loopcol" \
    "$(median <"$out/r_sps")" "$(median <"$out/r_mbs")" "$(median <"$out/r_rss")" "$(median <"$out/r_cpu")" \
    "$(median <"$out/r_col")" | tee -a "$out/overhead.md"
done
