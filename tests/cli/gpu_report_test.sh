#!/usr/bin/env bash
# `aiflame report` and GPU instruction names: nvdisasm answering (a stand-in printing the real listing
# of the demo cubin), failing (one note, offsets only, still exit 0), --stall-reasons, and the count
# of samples without source lines.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The demo as recorded before SASS was stored (the stand-in prints that cubin's listing).
DEMO=$SRC/tests/data/demo_matmul_unfinalized.aiflame
printf '#!/bin/sh\ncat %s\n' "$SRC/tests/data/nvdisasm/demo_c.txt" >"$T/nvdisasm_ok"
printf '#!/bin/sh\necho "nvdisasm fatal" >&2\nexit 1\n' >"$T/nvdisasm_bad"
chmod +x "$T/nvdisasm_ok" "$T/nvdisasm_bad"

"$AIFLAME" report "$DEMO" --nvdisasm "$T/nvdisasm_ok" --plain -o "$T/ok.folded" 2>"$T/err"
check_status "report with nvdisasm exits 0" $?
grep -q ';matmul.cu:28;FFMA 0x[0-9a-f]*;' "$T/ok.folded"
check_status "the naive kernel's hot line shows its FFMA" $?
! grep -q 'nvdisasm' "$T/err"
check_status "no nvdisasm note when it works" $?

"$AIFLAME" report "$DEMO" --nvdisasm "$T/nvdisasm_bad" --plain -o "$T/bad.folded" 2>"$T/err"
check_status "report with a failing nvdisasm exits 0" $?
[ "$(grep -c 'nvdisasm_bad failed' "$T/err")" -eq 1 ]
check_status "one note for a failing nvdisasm" $? "$T/err"
! grep -q ';[A-Z][A-Z0-9._]* 0x' "$T/bad.folded" && grep -q ';matmul.cu:28;0x[0-9a-f]*;' "$T/bad.folded"
check_status "offsets only without nvdisasm" $?

"$AIFLAME" report "$DEMO" --nvdisasm "$T/nvdisasm_ok" --stall-reasons none --plain -q -o "$T/none.folded"
! grep -qv ';[A-Z][A-Z0-9._]* 0x[0-9a-f]* [0-9]*$' "$T/none.folded"
check_status "--stall-reasons none ends every stack at the instruction" $?
sum() { awk '{s += $NF} END {print s}' "$1"; }
[ "$(sum "$T/none.folded")" = "$(sum "$T/ok.folded")" ]
check_status "--stall-reasons keeps the total" $?

"$AIFLAME" report "$SRC/tests/data/gpt_train.aiflame" -o "$T/gpt.folded" 2>"$T/err"
check_status "report of gpt_train exits 0" $? "$T/err"
grep -q 'GPU samples (100.0%) have no source line' "$T/err"
check_status "samples without line info are counted" $? "$T/err"

finish gpu_report
