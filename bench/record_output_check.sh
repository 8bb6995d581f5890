#!/usr/bin/env bash
# Issue #25 on the GPU machine: the injection library writes under record's run-unique prefix and
# record names the profiles at the end; concurrent runs with the same -o keep one profile each; an
# unusable output location is said before the program starts; Ctrl-C while nvdisasm runs at the end
# stops record at once with the profile kept. One PASS/FAIL line per check.
# Usage: bench/record_output_check.sh   (binaries in $AIFLAME_BIN, default .dist)
set -u
bin=${AIFLAME_BIN:-.dist}
A=$bin/aiflame
D=$bin/aiflame_demo_matmul
pass=0; fail=0
check() { if eval "$2"; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); return 1; fi; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

$A record -q -o "$T/one.data" -- $D 200 >/dev/null 2>"$T/err"
rc=$?
check "one process: exit 0, FILE written, nothing run-private left" '[ $rc -eq 0 ] && [ -s "$T/one.data" ] && ! ls "$T" | grep -q rec-'
$A report -q "$T/one.data" -o "$T/one.folded" 2>>"$T/err"
check "one process: report reads it" '[ -s "$T/one.folded" ]'

$A record -q -o "$T/two.data" -- sh -c "$D 200 >/dev/null & $D 200 >/dev/null; wait" 2>"$T/err"
n=$(ls "$T" | grep -Ec '^two\.data\.[0-9]+$')
check "two processes: FILE.<pid> each ($n)" '[ "$n" -eq 2 ] && ! ls "$T" | grep -q rec-'

$A record -q -o "$T/c.data" -- $D 400 >/dev/null 2>"$T/c1.err" &
a=$!
sleep 1
$A record -o "$T/c.data" -- $D 100 >/dev/null 2>"$T/c2.err"
rc2=$?
wait $a
rc1=$?
check "concurrent runs: both exit 0" '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]'
check "concurrent runs: FILE and FILE.old, no FILE.<pid>" '[ -s "$T/c.data" ] && [ -s "$T/c.data.old" ] && ! ls "$T" | grep -Eq "^c\.data\.[0-9]+$"'
$A report "$T/c.data" -o "$T/c1.folded" 2>"$T/r1.err"; r1=$?
$A report "$T/c.data.old" -o "$T/c2.folded" 2>"$T/r2.err"; r2=$?
# CUPTI samples a GPU for one process at a time: the run that started second records launches and
# kernel times without GPU samples, and its report says why (its folded file is empty: no samples).
check "concurrent runs: both readable, the second says its GPU was sampled by the first" \
  '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -s "$T/c1.folded" ] && grep -q "already PC-sampled by process" "$T/r2.err"' ||
  { echo "  second run's record stderr:"; sed 's/^/    /' "$T/c2.err"; echo "  reports (exit $r1, $r2):";
    sed 's/^/    /' "$T/r1.err" "$T/r2.err"; wc -c "$T/c1.folded" "$T/c2.folded" | sed 's/^/    /'; }

$A record -o "$T/nodir/x.data" -- $D 50 >"$T/out" 2>"$T/err"
rc=$?
check "missing directory: said first, program ran, 125" '[ $rc -eq 125 ] && head -1 "$T/err" | grep -q "does not exist" && [ -s "$T/out" ]'

# Ctrl-C in the end phase: nvdisasm runs on the sampled kernels after the program exits.
$A record -o "$T/i.data" -- $D 300 >/dev/null 2>"$T/i.err" &
a=$!
sleep 1
for _ in $(seq 600); do pgrep -P $a -x aiflame_demo_ma >/dev/null || break; sleep 0.05; done  # the program has ended
kill -INT $a
t0=$(date +%s.%N)
wait $a
rc=$?
dt=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
echo "interrupt in the end phase: exit $rc after ${dt} s"
check "Ctrl-C after the program: aiflame ends (exit $rc), profile readable" '$A report -q "$T/i.data" -o "$T/i.folded" && [ -s "$T/i.folded" ]'

echo "record_output_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
