#!/usr/bin/env bash
# `aiflame top -p PID` (issue 66 item 2): attached to a running program through record --pid's ptrace
# injection, with the fake libcuda and libcupti of tests/cli/attach (a whole recording without a GPU):
# plain blocks whose sample totals grow while it records, the kernel with its launching function, and
# the program running on after top detaches; then record's closing summary of the same program.
set -u
AIFLAME=$1 TARGET=$2 FAKE_CUDA=$3 FAKE_CUPTI=$4
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(env AIFLAME_CUPTI="$FAKE_CUPTI" "$TARGET" 600 "$FAKE_CUDA" >"$T/target.out" 2>&1; echo $? >"$T/target.rc") &
sub=$!
PID=
for _ in $(seq 200); do PID=$(pgrep -P "$sub" | head -1); [ -n "$PID" ] && break; sleep 0.02; done
for _ in $(seq 600); do [ -s "$T/target.out" ] && break; sleep 0.05; done

timeout 120 "$AIFLAME" top -p "$PID" --duration 2 --refresh 0.3 >"$T/top" 2>"$T/err"
rc=$?
if grep -q "ptrace" "$T/err" && [ -z "${CI:-}" ]; then
  echo "SKIP: ptrace is not permitted in this environment: $(cat "$T/err")"
  exit 77
fi
check_status "top -p: exits 0 (status $rc)" $rc "$T/err"
grep '^aiflame top' "$T/top" | sed 's/.*|  \([0-9]*\) GPU samples.*/\1/' >"$T/totals"
check "top -p: several blocks" '[ "$(grep -c "" "$T/totals")" -ge 2 ]'
check "top -p: totals grow" 'sort -n -c "$T/totals" && [ "$(tail -1 "$T/totals")" -gt "$(head -1 "$T/totals")" ]'
check "top -p: the last block is the ended recording" 'grep "^aiflame top" "$T/top" | tail -1 | grep -q "\[ended\]"'
check "top -p: the kernel and its launching function" 'grep -q "<-  fake_cupti_launch" "$T/top" && grep -q " fake_kernel$" "$T/top"'
check "top -p: the program runs on after top" 'kill -0 "$PID" 2>/dev/null && [ ! -e "$T/target.rc" ]'

# record's closing summary ends with the three lines (issue 66 item 1): the top kernels' share, the top
# stall, the top line of the program's code.
timeout 120 "$AIFLAME" record -p "$PID" --duration 1 -o "$T/r.data" 2>"$T/rec.err"
check_status "record -p: exits 0" $? "$T/rec.err"
check "record: the top kernels' share" 'grep -q "^aiflame: 100.0% of GPU samples in 1 kernel: fake_kernel 100.0%$" "$T/rec.err"'
check "record: the top stall" 'grep -q "^aiflame: top stall selected 100.0%$" "$T/rec.err"'
check "record: the top line" 'grep -q "^aiflame: top line fake_cupti_launch [0-9.]*% of GPU samples, mostly fake_kernel$" "$T/rec.err"'

finish top_attach
