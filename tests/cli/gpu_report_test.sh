#!/usr/bin/env bash
# `aiflame report` and GPU instruction names: nvdisasm answering (a stand-in printing the real listing
# of the demo cubin), failing (one note, offsets only, still exit 0), --stall-reasons, and the count
# of samples without source lines.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
pass=0
# check NAME STATUS [FILE]: STATUS is the exit status of the condition (take it as the next word after
# the condition, `check NAME $?`, never inside a $(...) in the same line: that would be the status of
# the substitution). FILE, when given, is printed on failure.
check() {
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL $1"; [ -n "${3:-}" ] && sed 's/^/  | /' "$3"; fail=$((fail + 1)); fi
}
# The demo as recorded before SASS was stored (the stand-in prints that cubin's listing).
DEMO=$SRC/tests/data/demo_matmul_unfinalized.aiflame
printf '#!/bin/sh\ncat %s\n' "$SRC/tests/data/nvdisasm/demo_c.txt" >"$T/nvdisasm_ok"
printf '#!/bin/sh\necho "nvdisasm fatal" >&2\nexit 1\n' >"$T/nvdisasm_bad"
chmod +x "$T/nvdisasm_ok" "$T/nvdisasm_bad"

"$AIFLAME" report "$DEMO" --nvdisasm "$T/nvdisasm_ok" --plain -o "$T/ok.folded" 2>"$T/err"
check "report with nvdisasm exits 0" $?
grep -q ';matmul.cu:28;FFMA 0x[0-9a-f]*;' "$T/ok.folded"
check "the naive kernel's hot line shows its FFMA" $?
! grep -q 'nvdisasm' "$T/err"
check "no nvdisasm note when it works" $?

"$AIFLAME" report "$DEMO" --nvdisasm "$T/nvdisasm_bad" --plain -o "$T/bad.folded" 2>"$T/err"
check "report with a failing nvdisasm exits 0" $?
[ "$(grep -c 'nvdisasm_bad failed' "$T/err")" -eq 1 ]
check "one note for a failing nvdisasm" $? "$T/err"
! grep -q ';[A-Z][A-Z0-9._]* 0x' "$T/bad.folded" && grep -q ';matmul.cu:28;0x[0-9a-f]*;' "$T/bad.folded"
check "offsets only without nvdisasm" $?

"$AIFLAME" report "$DEMO" --nvdisasm "$T/nvdisasm_ok" --stall-reasons none --plain -q -o "$T/none.folded"
! grep -qv ';[A-Z][A-Z0-9._]* 0x[0-9a-f]* [0-9]*$' "$T/none.folded"
check "--stall-reasons none ends every stack at the instruction" $?
sum() { awk '{s += $NF} END {print s}' "$1"; }
[ "$(sum "$T/none.folded")" = "$(sum "$T/ok.folded")" ]
check "--stall-reasons keeps the total" $?

"$AIFLAME" report "$SRC/tests/data/gpt_train.aiflame" -o "$T/gpt.folded" 2>"$T/err"
check "report of gpt_train exits 0" $? "$T/err"
grep -q 'GPU samples (100.0%) have no source line' "$T/err"
check "samples without line info are counted" $? "$T/err"

echo "gpu_report: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
