#!/usr/bin/env bash
# The habits of the neighbouring CLIs (issue 66 item 4): a command without --, record -o x.svg, --duration
# when launching, -p, --rate, unknown options named (with "did you mean"). This machine has no NVIDIA
# driver: record runs the program unprofiled and writes a profile that says so, which is enough to see
# how the command line was read.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A command without "--": the first word that is no option starts it, and its own options are its own.
"$AIFLAME" record -q -o "$T/a.data" /bin/sh -c 'echo "args:$1"; exit 3' sh -x >"$T/out" 2>"$T/err"
rc=$?
check "command without --: the program's status ($rc)" '[ $rc -eq 3 ]'
check "command without --: its own options reach it" 'grep -q "^args:-x$" "$T/out"'
"$AIFLAME" record -q -o "$T/a.data" -- /bin/sh -c 'exit 4' 2>"$T/err"
check "with --: as before" '[ $? -eq 4 ]'

# Unknown options are named; a misspelt one gets the nearest.
"$AIFLAME" record --bogus 100 -- /bin/true 2>"$T/err"
rc=$?
check "unknown option named ($(cat "$T/err"))" '[ $rc -eq 2 ] && grep -q "unknown option '"'"'--bogus'"'"'" "$T/err" && ! grep -q "not expected" "$T/err"'
"$AIFLAME" record --ouput "$T/b.data" -- /bin/true 2>"$T/err"
check "did you mean --output (record)" 'grep -q "did you mean --output?" "$T/err" && [ "$(grep -c "" "$T/err")" -eq 1 ]'
"$AIFLAME" report --ouput x.svg "$SRC/tests/data/demo_matmul.aiflame" 2>"$T/err"
check "did you mean --output (report)" 'grep -q "did you mean --output?" "$T/err"'

# -p is --pid.
"$AIFLAME" record -p 0 2>"$T/err"
rc=$?
check "-p is --pid ($(cat "$T/err"))" '[ $rc -eq 2 ] && grep -q -- "--pid" "$T/err" && ! grep -q "unknown option" "$T/err"'

# --rate HZ: the period is 2^N cycles, N = round(log2(clock / HZ)); no driver here: 1.98 GHz, so 100 Hz
# is period 24, handed to the injection library in AIFLAME_PERIOD.
"$AIFLAME" record --rate 100 -o "$T/c.data" -- /bin/sh -c 'echo "period:$AIFLAME_PERIOD"' >"$T/out" 2>"$T/err"
check "--rate 100: period 24 in the program's environment" 'grep -q "^period:24$" "$T/out"'
check "--rate 100: said in one line" 'grep -q "^aiflame: --rate 100: --period 24 " "$T/err"'
"$AIFLAME" record --rate 100 --period 20 -o "$T/c.data" -- /bin/true 2>"$T/err"
check "--rate with --period: refused" '[ $? -eq 2 ]'

# --duration when launching: the program is interrupted (SIGINT) once it is over. The bound is the
# test's guard against a hang, not a timing: sleep would run 60 s.
timeout 50 "$AIFLAME" record -q --duration 0.2 -o "$T/d.data" -- sleep 60 2>"$T/err"
rc=$?
check "--duration 0.2 -- sleep 60: interrupted (status $rc)" '[ $rc -eq 130 ]'

# record -o flame.svg: records flame.aiflame, then draws flame.svg from it.
"$AIFLAME" record -q -o "$T/flame.svg" -- /bin/true 2>"$T/err"
check_status "record -o flame.svg exits 0" $? "$T/err"
check "record -o flame.svg: the profile beside it" '[ -s "$T/flame.aiflame" ]'
check "record -o flame.svg: the picture, as report draws it" \
  '"$AIFLAME" report -q "$T/flame.aiflame" -o "$T/again.svg" && cmp -s "$T/flame.svg" "$T/again.svg"'
"$AIFLAME" record -q -o "$T/page.html" /bin/true 2>"$T/err"
check "record -o page.html (and no --)" '[ -s "$T/page.html" ] && grep -q "<html" "$T/page.html"'

finish cli_habits
