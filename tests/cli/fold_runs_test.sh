#!/usr/bin/env bash
# Runs of unsymbolized library frames: folded in the pictures by default, kept in folded output
# unless --fold-runs, kept in the pictures with --no-fold-runs; folding never changes the totals.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
IN="$SRC/tests/data/gpt_train.aiflame"
total() { awk '{n += $NF} END {print n}' "$1"; }
"$AIFLAME" report "$IN" -q -o "$T/default.svg"
"$AIFLAME" report "$IN" -q --no-fold-runs -o "$T/kept.svg"
"$AIFLAME" report "$IN" -q --plain -o "$T/default.folded"
"$AIFLAME" report "$IN" -q --plain --fold-runs -o "$T/folded.folded"
check "svg folds runs by default" 'grep -q "\[libcublasLt.so.13: [0-9]* frames\]" "$T/default.svg" && ! grep -q "libcublasLt.so.13+0x" "$T/default.svg"'
check "--no-fold-runs keeps them in svg" 'grep -q "libcublasLt.so.13+0x" "$T/kept.svg" && ! grep -q "libcublasLt.so.13: " "$T/kept.svg"'
check "folded keeps every frame by default" 'grep -q "libcublasLt.so.13+0x" "$T/default.folded" && ! grep -q " frames\]" "$T/default.folded"'
check "--fold-runs folds folded output" 'grep -q "\[libcublasLt.so.13: [0-9]* frames\]" "$T/folded.folded"'
check "folding keeps the totals" '[ "$(total "$T/default.folded")" = "$(total "$T/folded.folded")" ]'
check "folded stacks are shorter" '[ "$(awk -F";" "{n += NF} END {print n}" "$T/folded.folded")" -lt "$(awk -F";" "{n += NF} END {print n}" "$T/default.folded")" ]'
# diff takes report's option and default (by its output format), through report's pipeline.
"$AIFLAME" diff "$IN" "$IN" -q -o "$T/d.svg"
"$AIFLAME" diff "$IN" "$IN" -q --no-fold-runs -o "$T/d_kept.svg"
"$AIFLAME" diff "$IN" "$IN" -q -o "$T/d.folded"
"$AIFLAME" diff "$IN" "$IN" -q --fold-runs -o "$T/d_folded.folded"
check "diff svg folds runs by default" 'grep -q "\[libcublasLt.so.13: [0-9]* frames\]" "$T/d.svg" && ! grep -q "libcublasLt.so.13+0x" "$T/d.svg"'
check "diff --no-fold-runs keeps them" 'grep -q "libcublasLt.so.13+0x" "$T/d_kept.svg"'
check "diff folded keeps every frame by default" 'grep -q "libcublasLt.so.13+0x" "$T/d.folded" && ! grep -q " frames\]" "$T/d.folded"'
check "diff --fold-runs folds its folded output" 'grep -q "\[libcublasLt.so.13: [0-9]* frames\]" "$T/d_folded.folded"'
check "diff --help lists --fold-runs" '"$AIFLAME" diff --help | grep -q -- "--fold-runs,--no-fold-runs"'
finish fold_runs
