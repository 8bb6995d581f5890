#!/usr/bin/env bash
# Why a detach of `record --pid` does not finish under a PyTorch job (issue #27): attaches for 5 s to
# a running gpt_train.py started with AIFLAME_DEBUG=1 (the library's trace goes to the program's
# stderr), and if aiflame has not returned 25 s after the window, prints the user stacks of every
# thread of the program (eu-stack, carried in $AIFLAME_BIN/tools with its libraries, else gdb) and
# their kernel wait channels, then the library's trace.
# Usage (repo root, binaries in .dist/): bench/attach_debug.sh     Env: AIFLAME_BIN, ADBG_OUT, WAIT_S (25)
set -u
bin=${AIFLAME_BIN:-.dist}
out=${ADBG_OUT:-/tmp/attach_debug}
rm -rf "$out"; mkdir -p "$out"
export PYTHONUNBUFFERED=1
stacks() {
  local pid=$1
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan 2>/dev/null)"; done
  if [ -x "$bin/tools/eu-stack" ]; then
    LD_LIBRARY_PATH="$bin/tools" "$bin/tools/eu-stack" -p "$pid" 2>&1 | head -400
  elif command -v gdb >/dev/null; then
    gdb -p "$pid" -batch -ex "thread apply all bt 30" 2>&1 | grep -v "^\[New\|^Reading\|^warning" | head -400
  else
    echo "(no eu-stack or gdb)"
  fi
}
AIFLAME_DEBUG=1 STEPS=100000 REPORT_EVERY=50 python3 bench/workloads/gpt_train.py >"$out/prog.out" 2>"$out/prog.err" &
prog=$!
for _ in $(seq 600); do [ "$(grep -c '^step ' "$out/prog.out")" -ge 3 ] && break; sleep 0.1; done
echo "attach_debug: $(date -u +%FT%T), pid $prog, $(grep -c '^step ' "$out/prog.out") step lines before attach"
"$bin/aiflame" record --pid $prog --duration 5 -f -o "$out/att.aiflame" >"$out/cli.out" 2>"$out/cli.err" &
cli=$!
t0=$(date +%s)
done_ok=0
for _ in $(seq $((5 + ${WAIT_S:-25}))); do
  sleep 1
  if ! kill -0 $cli 2>/dev/null; then done_ok=1; break; fi
done
echo "aiflame returned: $done_ok after $(( $(date +%s) - t0 )) s"
if [ $done_ok = 0 ]; then
  echo "=== program threads while the CLI waits ==="
  stacks $prog
fi
wait $cli 2>/dev/null; echo "cli exit $?"
echo "=== CLI stderr ==="; cat "$out/cli.err"
echo "=== library trace (program stderr, aiflame lines) ==="; grep aiflame "$out/prog.err" | tail -80
echo "=== program still stepping? ==="; tail -3 "$out/prog.out"
sleep 3; tail -1 "$out/prog.out"
echo "threads now: $(ls /proc/$prog/task | wc -l)"
kill $prog 2>/dev/null; wait $prog 2>/dev/null
