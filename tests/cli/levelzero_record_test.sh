#!/usr/bin/env bash
# `aiflame record -- ./ze_test_program` then `aiflame report` against our fake Level Zero driver
# (tests/record/levelzero/fake_ze_driver.cpp), which Debian's real loader loads through
# ZE_ENABLE_ALT_DRIVERS, with the real tracing layer between: the towers, stall reasons and shares of
# the driver's known truth within 1 point, instruction names from iga64 and source lines from the
# binary's line table; then the failure paths (no metric group, streamer refused, buffer overflow, no
# devices), each of which the program survives with one warning.
# Usage: levelzero_record_test.sh AIFLAME ZE_TEST_PROGRAM FAKE_DRIVER ZEBIN
set -u
AIFLAME=$1 PROG=$2 DRIVER=$3 ZEBIN=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export ZE_ENABLE_ALT_DRIVERS=$DRIVER
# The loader and its tracing layer are not built with the sanitizers: their allocations are theirs.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

"$AIFLAME" record -q -o "$T/p.data" -- "$PROG" "$ZEBIN" 200 >"$T/out" 2>"$T/err"
check_status "record exits as the program does" $? "$T/err"
check "the program ran to its end" 'grep -q "200 rounds" "$T/out"'
check "no warning on the way" '! grep -q "aiflame:" "$T/err" || { cat "$T/err"; false; }'
"$AIFLAME" report "$T/p.data" -o "$T/p.folded" 2>"$T/rerr"
check_status "report reads the profile" $? "$T/rerr"

# share PATTERN [WITHIN]: percent of the samples of the lines matching WITHIN (default all) that match
# PATTERN, frames compared without their kind annotations ("kernel_a_[G]").
share() {
  awk -v pat="$1" -v within="${2:-}" '
    { n = $NF; line = $0; sub(/ [0-9]+$/, "", line); gsub(/_\[[A-Za-z]\]/, "", line) }
    within == "" || line ~ within { all += n; if (line ~ pat) hit += n }
    END { if (all == 0) print -1; else printf "%.2f\n", 100 * hit / all }' "$T/p.folded"
}
near() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b - 1 && a <= b + 1) }'; }
total=$(awk '{ s += $NF } END { print s + 0 }' "$T/p.folded")
check "samples were recorded ($total)" '[ "$total" -gt 1000 ]'
# Per execution: kernel_a 40 reports, kernel_b 40; per round 4 of kernel_a (3 from host_one, 1 from
# host_two) and 1 of kernel_b.
a_one=$(share 'host_one' ';kernel_a;')
check "kernel_a from host_one: 75% of its samples (got $a_one)" 'near "$a_one" 75'
a_two=$(share 'host_two' ';kernel_a;')
check "kernel_a from host_two: 25% (got $a_two)" 'near "$a_two" 25'
b_three=$(share 'host_three' ';kernel_b;')
check "kernel_b from host_three only (got $b_three)" 'near "$b_three" 100'
b_share=$(share ';kernel_b;')
check "kernel_b: 20% of all samples (got $b_share)" 'near "$b_share" 20'
sbid=$(share ';add 0x10;sbid$' ';kernel_a;')
send=$(share ';mul 0x20;send$' ';kernel_a;')
check "kernel_a: sbid at add 0x10 75%, send at mul 0x20 25% (got $sbid, $send)" 'near "$sbid" 75 && near "$send" 25'
active=$(share ';mov 0x0;active$' ';kernel_b;')
pipe=$(share ';and 0x30;pipestall$' ';kernel_b;')
control=$(share ';mul 0x20;control$' ';kernel_b;')
check "kernel_b: active 25%, pipestall 25%, control 50% (got $active, $pipe, $control)" \
  'near "$active" 25 && near "$pipe" 25 && near "$control" 50'
plain=$(sed 's/_\[[A-Za-z]\]//g' "$T/p.folded")
check "source lines from the binary's line table" 'grep -q ";kernels.cl:11;add 0x10;" <<<"$plain"'
check "the launch stack runs from main through host_one to the kernel" \
  'grep -q ";main;(anonymous namespace)::host_one;-;kernel_a;" <<<"$plain"'
check "no frame of the loader or the tracing layer between host_one and the kernel" \
  '! grep -q "host_one;[^-]" <<<"$plain"'
# Every format works on the profile (SVG as one example besides folded).
"$AIFLAME" report "$T/p.data" -o "$T/p.svg" 2>/dev/null
check_status "SVG written" $?

# Without iga64 the instructions keep their offsets, and one note says why.
PATH=/nonexistent "$AIFLAME" record -o "$T/n.data" -- "$PROG" "$ZEBIN" 3 >/dev/null 2>"$T/nerr"
check_status "without iga64: recorded" $? "$T/nerr"
check "without iga64: the note names the package" 'grep -q "iga64 not found on PATH.*libigc-tools" "$T/nerr" || { cat "$T/nerr"; false; }'
PATH=/nonexistent "$AIFLAME" report "$T/n.data" -o "$T/n.folded" 2>/dev/null
check "without iga64: offsets only" 'grep -q ";0x10_\?\[\?g\?\]\?;sbid" "$T/n.folded" && ! grep -q "add 0x10" "$T/n.folded"'

# Failure paths: the program runs to its end and aiflame says why there are no samples, once.
fails() {  # fails NAME ENV PATTERN
  env "$2" "$AIFLAME" record -o "$T/f.data" -- "$PROG" "$ZEBIN" 3 >"$T/fout" 2>"$T/ferr"
  rc=$? want=$3
  check "$1: program unharmed (status $rc)" '[ $rc -eq 0 ] && grep -q "rounds\|no devices" "$T/fout"'
  # While recording (the summary's "recorded warning" line repeats it from the profile).
  check "$1: a line says why" '[ "$(grep -v "recorded warning" "$T/ferr" | grep -c -- "$want")" -ge 1 ] || { cat "$T/ferr"; false; }'
  "$AIFLAME" report "$T/f.data" -o "$T/f.folded" 2>"$T/frerr"
  check "$1: the profile reads and names the warning" 'grep -q -- "$want" "$T/frerr" || { cat "$T/frerr"; false; }'
  rm -f "$T"/f.data* "$T/f.folded"
}
fails "no metric group" FAKE_ZE_NO_EU_STALL=1 'no "EuStallSampling" metric group'
fails "streamer refused" FAKE_ZE_STREAMER_REFUSED=1 'observation_paranoid'
fails "buffer overflow" FAKE_ZE_STREAM_CAPACITY=20 'EU-stall buffer overflowed'
fails "no devices" FAKE_ZE_DEVICES=0 'reports no devices'

# A program of both runtimes: the one it initialized first (Level Zero here) records it; the other
# gets one line.
ZE_TEST_ALSO_CUDA=1 "$AIFLAME" record -o "$T/b.data" -- "$PROG" "$ZEBIN" 3 >"$T/bout" 2>"$T/berr"
check_status "both runtimes: the program runs on" $? "$T/berr"
check "both runtimes: a line says which records" \
  'grep -q "uses both CUDA and Level Zero; only its Level Zero work is recorded" "$T/berr" || { cat "$T/berr"; false; }'
"$AIFLAME" report "$T/b.data" -o "$T/b.folded" 2>/dev/null
check "both runtimes: the Level Zero work is recorded" 'grep -q "host_one.*kernel_a" "$T/b.folded"'

finish levelzero_record
