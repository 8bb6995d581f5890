#!/usr/bin/env bash
# The text report (issue 66 item 1): `aiflame report FILE` with no -o, -o -, -o x.txt and --format text
# print the same summary; it reads aiflame.data when no file is named; its tables are the committed
# goldens (tests/data/*.report.txt: the demo's three kernels with their GPU lines, and gpt_train's
# backward pass, whose kernels autograd's thread launched, each with its launch site in the script).
# AIFLAME_UPDATE_GOLDEN=1 rewrites the goldens.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for fixture in demo_matmul backward/gpt_train_autograd_on; do
  golden="$SRC/tests/data/$fixture.report.txt"
  "$AIFLAME" report -q "$SRC/tests/data/$fixture.aiflame" >"$T/out.txt" 2>"$T/err"
  check_status "$fixture: report exits 0" $? "$T/err"
  [ -n "${AIFLAME_UPDATE_GOLDEN:-}" ] && cp "$T/out.txt" "$golden"
  check "$fixture: the golden" 'cmp -s "$T/out.txt" "$golden" || { diff "$golden" "$T/out.txt" | head -20; false; }'
done

FIX="$SRC/tests/data/demo_matmul.aiflame"
"$AIFLAME" report -q "$FIX" >"$T/plain.txt"
"$AIFLAME" report -q "$FIX" -o - >"$T/dash.txt"
check "-o - is standard output" 'cmp -s "$T/plain.txt" "$T/dash.txt"'
"$AIFLAME" report -q "$FIX" -o "$T/x.txt"
check "-o x.txt writes the text report" 'cmp -s "$T/plain.txt" "$T/x.txt"'
"$AIFLAME" report -q "$FIX" --format text -o "$T/y.out"
check "--format text" 'cmp -s "$T/plain.txt" "$T/y.out"'
"$AIFLAME" report -q "$FIX" --format folded --annotate -o - >"$T/f.folded"
check "-o - with --format folded writes folded stacks" 'cmp -s "$T/f.folded" "$SRC/tests/data/demo_matmul.folded"'
check "the report names the kernels" 'grep -q "^ *[0-9]* *[0-9.]*% .* matmul_basic$" "$T/plain.txt"'

"$AIFLAME" diff -q "$FIX" "$FIX" -o - >"$T/diff.folded"
"$AIFLAME" diff -q "$FIX" "$FIX" >"$T/diff2.folded"
check "diff -o - is standard output too" '[ -s "$T/diff.folded" ] && cmp -s "$T/diff.folded" "$T/diff2.folded" && [ ! -e ./- ]'

# No file named: aiflame.data of the current directory, as perf report reads perf.data.
mkdir "$T/run" && cp "$FIX" "$T/run/aiflame.data"
(cd "$T/run" && "$AIFLAME" report -q >"$T/default.txt" 2>"$T/err")
check_status "report with no file reads aiflame.data" $? "$T/err"
check "... and says the same" 'cmp -s "$T/plain.txt" "$T/default.txt"'
(cd "$T" && "$AIFLAME" report -q >/dev/null 2>"$T/err")
check "no aiflame.data: one line naming it" '[ $? -ne 0 ] && grep -q "aiflame.data" "$T/err" && [ "$(grep -c "" "$T/err")" -eq 1 ]'

# Autograd's kernels carry their forward stack: every top kernel of gpt_train has a launch site in the
# script. The recording without the tracking (the picture before issue 23) has kernels without one,
# which shows the check can fail.
check "backward kernels have a launch site" '! grep -q "from -$" "$SRC/tests/data/backward/gpt_train_autograd_on.report.txt"'
"$AIFLAME" report -q "$SRC/tests/data/backward/gpt_train_autograd_off.aiflame" >"$T/off.txt"
check "without the forward stacks, some have none" 'grep -q "from -$" "$T/off.txt"'

# `report --help` says that several files are merged.
"$AIFLAME" report --help >"$T/help"
check "report --help: several files are merged" 'grep -qi "merged" "$T/help"'

finish text_report
