#!/usr/bin/env bash
# Issue #25, as a user (and an adversary) runs aiflame: record never loses a profile silently nor
# moves the user's data, runs never share files, report never aborts on input and says what is wrong
# in one line. Runs without a GPU: a "program" that writes its own per-process profile (the fixture)
# stands in for the injection library, which writes $AIFLAME_OUTPUT.<pid>.
# Usage: reliability_test.sh AIFLAME SRC
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FIX=$SRC/tests/data/demo_matmul.aiflame
UNFIN=$SRC/tests/data/demo_matmul_unfinalized.aiflame
lines() { grep -c '' "$1"; }
# A memory limit for the report cases, except under AddressSanitizer (its shadow memory needs
# terabytes of address space).
if grep -q __asan_init "$AIFLAME" 2>/dev/null; then vlimit() { :; }; else vlimit() { ulimit -v "$1"; }; fi

# --- record: the output location is checked before the program starts -----------------------------
"$AIFLAME" record -o "$T/nodir/p.data" -- sh -c 'echo ran; exit 3' >"$T/out" 2>"$T/err"
rc=$?
check "missing dir: said first, in one line" 'head -1 "$T/err" | grep -q "nodir does not exist"'
check "missing dir: the program still ran" 'grep -qx ran "$T/out"'
check "missing dir: the program's status (3), the loss said in one line" '[ $rc -eq 3 ] && [ "$(lines "$T/err")" -eq 1 ] && grep -q "runs unprofiled" "$T/err"'

mkdir "$T/ddir"
echo mine >"$T/ddir/keep"
"$AIFLAME" record -o "$T/ddir" -- true 2>"$T/err"
rc=$?
check "-o DIR: the directory is not renamed" '[ -f "$T/ddir/keep" ] && [ ! -e "$T/ddir.old" ]'
check "-o DIR: says it is a directory, the program's status" '[ $rc -eq 0 ] && [ "$(lines "$T/err")" -eq 1 ] && grep -q "is a directory" "$T/err"'
"$AIFLAME" record -f -o "$T/ddir" -- true 2>"$T/err"
rc=$?
check "-o DIR -f: not replaced, the program's status" '[ $rc -eq 0 ] && [ -f "$T/ddir/keep" ]'

"$AIFLAME" record --require-profile -o "$T/nodir/p.data" -- sh -c 'echo ran' >"$T/out" 2>"$T/err"
rc=$?
check "--require-profile: not run, status 2, one line" '[ $rc -eq 2 ] && [ ! -s "$T/out" ] && [ "$(lines "$T/err")" -eq 1 ] && grep -q "was not started" "$T/err"'

mkdir "$T/ro"
if [ "$(id -u)" -ne 0 ]; then
  chmod 555 "$T/ro"
  "$AIFLAME" record -o "$T/ro/p.data" -- true 2>"$T/err"
  rc=$?
  check "read-only dir: said, the program's status" '[ $rc -eq 0 ] && head -1 "$T/err" | grep -q "cannot create files in"'
  chmod 755 "$T/ro"
elif mount -t tmpfs -o size=512k,ro tmpfs "$T/ro" 2>/dev/null; then
  # As root (permissions do not stop root): a read-only file system, then a full one.
  "$AIFLAME" record -o "$T/ro/p.data" -- true 2>"$T/err"
  rc=$?
  check "read-only file system: said, the program's status" '[ $rc -eq 0 ] && head -1 "$T/err" | grep -q "Read-only file system"'
  umount "$T/ro"
  mount -t tmpfs -o size=512k tmpfs "$T/ro" && head -c 600000 /dev/zero >"$T/ro/fill" 2>/dev/null
  "$AIFLAME" record -o "$T/ro/p.data" -- sh -c 'echo ran' >"$T/out" 2>"$T/err"
  rc=$?
  check "full file system: said first, program ran, its status" '[ $rc -eq 0 ] && head -1 "$T/err" | grep -q "no space left" && grep -qx ran "$T/out"'
  umount "$T/ro"
fi

# A write failing at the end (the file size limit stands in for a full disk): one error line,
# status 125, no empty file left as "the profile". Before: exit 0, nothing said, a 0-byte file.
# (stderr through a pipe: a file would be under the limit too)
( (ulimit -f 0; trap '' XFSZ; exec "$AIFLAME" record -o "$T/full.data" -- true) 2>&1 >/dev/null ) | cat >"$T/err"
rc=${PIPESTATUS[0]}
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  pass=$((pass + 1))  # with a driver no profile is written for `true`: nothing to fail
else
  check "write failure at the end: status 125, one line" '[ $rc -eq 125 ] && [ "$(grep -c "aiflame" "$T/err")" -eq 2 ] && tail -1 "$T/err" | grep -q "cannot write the profile"'
  check "write failure at the end: no 0-byte profile" '[ ! -e "$T/full.data" ]'
fi

# A per-process file left empty (the injection library's writes all failed): a lost profile, said
# so, never "the program made no CUDA calls".
"$AIFLAME" record -o "$T/z.data" -- sh -c ': >"$AIFLAME_OUTPUT.$$"' 2>"$T/err"
rc=$?
check "0-byte profile: status 125, disk named" '[ $rc -eq 125 ] && grep -q "disk" "$T/err" && ! grep -q "no CUDA call" "$T/err"'
check "0-byte profile: not left as the output" '[ ! -e "$T/z.data" ]'

# -q silences the no-driver warning.
"$AIFLAME" record -q -o "$T/q.data" -- true 2>"$T/err"
check "-q: nothing on stderr" '[ ! -s "$T/err" ]'

# Four runs with the same -o at the same time (each program waits until all four have started):
# each finalizes its own file only; the file there before is moved to FILE.old once, and every run's
# profile survives, as FILE, FILE-2, FILE-3, FILE-4, the name said. Before #25 they took each other's
# files; before #68 only FILE and FILE.old remained.
echo previous >"$T/c.data"
mkdir "$T/started"
prog() { echo "cp '$FIX' \"\$AIFLAME_OUTPUT.\$\$\"; : >'$T/started/'\$\$; i=0; while [ \$(ls '$T/started' | wc -l) -lt 4 ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i+1)); done"; }
for i in 1 2 3 4; do "$AIFLAME" record -q --sass-timeout 0 -o "$T/c.data" -- sh -c "$(prog)" 2>"$T/err$i" & done
rcs=""; for j in $(jobs -p); do wait "$j"; rcs="$rcs$?"; done
check "concurrent runs: all four succeed ($rcs)" '[ "$rcs" = 0000 ]'
check "concurrent runs: the earlier file kept as FILE.old" 'grep -qx previous "$T/c.data.old"'
check "concurrent runs: four profiles, FILE and FILE-2..4" '[ -s "$T/c.data" ] && [ -s "$T/c.data-2" ] && [ -s "$T/c.data-3" ] && [ -s "$T/c.data-4" ] && [ ! -e "$T/c.data-5" ]'
check "concurrent runs: three say where their profile went" '[ "$(cat "$T"/err? | grep -c "named by another run meanwhile (kept); this run.s profile is $T/c.data-[234]$")" -eq 3 ]'
check "concurrent runs: no run-private file left" '! ls "$T" | grep -q "rec-"'
ok=0
for f in "$T/c.data" "$T/c.data-2" "$T/c.data-3" "$T/c.data-4"; do
  "$AIFLAME" report -q "$f" --annotate -o "$T/c.folded" -f && cmp -s "$T/c.folded" "$SRC/tests/data/demo_matmul.folded" && ok=$((ok + 1))
done
check "concurrent runs: all four profiles readable and whole ($ok)" '[ $ok -eq 4 ]'

# A device node, FIFO or link at -o is refused before the program starts, with -f too, and left as
# it is (issue #68: as root, `record -o /dev/full` renamed the device to /dev/full.old; -f deleted it).
# Copies in the temporary directory, never the real /dev entries.
mkfifo "$T/fifo.data"
nodes="fifo.data"
if [ "$(id -u)" -eq 0 ] && mknod "$T/full.dev" c 1 7 2>/dev/null; then nodes="$nodes full.dev"; fi
ln -s "$T/victim" "$T/link.data" && echo secret >"$T/victim" && nodes="$nodes link.data"
for n in $nodes; do
  for force in "" -f; do
    "$AIFLAME" record $force -o "$T/$n" -- sh -c 'echo ran' >"$T/out" 2>"$T/err"
    rc=$?
    check "-o $n $force: status 2, not run, one line" '[ $rc -eq 2 ] && [ ! -s "$T/out" ] && [ "$(lines "$T/err")" -eq 1 ] && grep -q "was not started" "$T/err"'
    check "-o $n $force: left as it was" '[ ! -e "$T/$n.old" ] && ! ls "$T" | grep -q "^$n-"'
  done
done
check "the FIFO is still a FIFO" '[ -p "$T/fifo.data" ]'
case $nodes in *full.dev*) check "the device node is still /dev/full's" '[ -c "$T/full.dev" ] && [ "$(stat -c %t:%T "$T/full.dev")" = 1:7 ]' ;; esac
check "the link and its target untouched" '[ -L "$T/link.data" ] && grep -qx secret "$T/victim"'
# A FIFO put at -o (or at -o.old) while the program runs is not replaced either: the profile is FILE-2.
for force in "" -f; do
  rm -rf "$T/late" && mkdir "$T/late"
  "$AIFLAME" record -q $force -o "$T/late/p.data" -- sh -c "cp '$FIX' \"\$AIFLAME_OUTPUT.\$\$\"; mkfifo '$T/late/p.data'" 2>"$T/err"
  rc=$?
  check "FIFO made during the run $force: kept, the profile is FILE-2" '[ $rc -eq 0 ] && [ -p "$T/late/p.data" ] && [ -s "$T/late/p.data-2" ] && [ ! -e "$T/late/p.data.old" ] && grep -q "p.data-2" "$T/err"'
done
rm -rf "$T/late" && mkdir "$T/late" && echo previous >"$T/late/p.data" && mkfifo "$T/late/p.data.old"
"$AIFLAME" record -q -o "$T/late/p.data" -- sh -c "cp '$FIX' \"\$AIFLAME_OUTPUT.\$\$\"" 2>"$T/err"
check "a FIFO at FILE.old: neither it nor FILE replaced" '[ -p "$T/late/p.data.old" ] && grep -qx previous "$T/late/p.data" && [ -s "$T/late/p.data-2" ]'

# Ctrl-C while the end phase waits for nvdisasm: aiflame stops at once and keeps the profile.
printf '#!/bin/sh\necho $$ >>"%s/nvdisasm.pids"\nexec sleep 30\n' "$T" >"$T/slow_nvdisasm" && chmod +x "$T/slow_nvdisasm"
"$AIFLAME" record -q --nvdisasm "$T/slow_nvdisasm" -o "$T/i.data" -- sh -c "cp '$UNFIN' \"\$AIFLAME_OUTPUT.\$\$\"" 2>"$T/err" &
a=$!
sleep 2
kill -INT $a
t0=$(date +%s)
for _ in $(seq 50); do kill -0 $a 2>/dev/null || break; sleep 0.1; done
alive=0; kill -0 $a 2>/dev/null && alive=1
kill -KILL $a 2>/dev/null
wait $a
rc=$?
check "Ctrl-C in the end phase: aiflame ends within 5 s with 130" '[ $alive -eq 0 ] && [ $rc -eq 130 ]'
check "Ctrl-C in the end phase: the profile is kept, readable" '"$AIFLAME" report -q "$T/i.data" -o "$T/i.folded" && [ -s "$T/i.folded" ]'
[ -f "$T/nvdisasm.pids" ] && while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$T/nvdisasm.pids"

# --- report: no input aborts, every input streamed ---------------------------------------------------
check "crafted seeds present" 'ls "$SRC"/tests/fuzz/corpus/profile_reader/crafted_*.aiflame >/dev/null 2>&1'
for f in "$SRC"/tests/fuzz/corpus/profile_reader/crafted_*.aiflame; do
  [ -e "$f" ] || continue
  for fmt in folded svg html heatmap pprof speedscope trace flamescope; do
    (vlimit 4000000; exec "$AIFLAME" report -q "$f" --format $fmt) >/dev/null 2>"$T/err"
    rc=$?
    check "crafted $(basename "$f") as $fmt: no abort (rc $rc)" '[ $rc -lt 128 ] && [ "$(lines "$T/err")" -le 1 ]'
  done
done

# FlameScope has no count field: one event per sample up to 256 MiB, then each event stands for
# several, said in one note (17 billion samples here; terabytes before the bound).
bytes=$( (vlimit 4000000; exec "$AIFLAME" report "$SRC/tests/fuzz/corpus/profile_reader/crafted_huge_sample_count.aiflame" \
           --format flamescope 2>"$T/err") | wc -c)
check "17 billion samples as flamescope: 128 to 257 MiB ($bytes bytes)" '[ "$bytes" -ge $((128 << 20)) ] && [ "$bytes" -le $((257 << 20)) ]'
check "17 billion samples as flamescope: one note says so" '[ "$(grep -c "^aiflame: note: FlameScope output bounded at 256 MiB" "$T/err")" -eq 1 ]'

(vlimit 2000000; exec "$AIFLAME" report /dev/zero) >/dev/null 2>"$T/err"
rc=$?
check "/dev/zero: one line, status 1" '[ $rc -eq 1 ] && [ "$(lines "$T/err")" -eq 1 ] && grep -q "/dev/zero" "$T/err"'

"$AIFLAME" report -q --format folded "$SRC/tests/data/demo_matmul.folded" >"$T/file.out"
"$AIFLAME" report -q --format folded <(cat "$SRC/tests/data/demo_matmul.folded") >"$T/pipe.out" 2>"$T/err"
check "folded through <(...)" '[ $? -eq 0 ] && cmp -s "$T/file.out" "$T/pipe.out"'
gzip -c "$SRC/tests/data/demo_matmul.folded" | "$AIFLAME" report -q --format folded /dev/stdin >"$T/gz.out" 2>"$T/err"
check "gzip'd folded through a pipe" 'cmp -s "$T/file.out" "$T/gz.out"'
"$AIFLAME" report -q "$FIX" >"$T/bin_file.out"
cat "$FIX" | "$AIFLAME" report -q /dev/stdin >"$T/bin_pipe.out" 2>"$T/err"
check "aiflame profile through a pipe" '[ -s "$T/bin_file.out" ] && cmp -s "$T/bin_file.out" "$T/bin_pipe.out"'
mkfifo "$T/fifo"
(cat "$SRC/tests/data/demo_matmul.folded" >"$T/fifo") &
timeout 20 "$AIFLAME" report -q --format folded "$T/fifo" >"$T/fifo.out" 2>"$T/err"
rc=$?
check "FIFO: no hang (rc $rc)" '[ $rc -eq 0 ] && cmp -s "$T/file.out" "$T/fifo.out"'

# Bounds for every input kind (issue #68 item 7). --max-depth shapes folded input too: one stack of
# 200,000 frames, at most 8 of them kept (before: all, and an SVG of 40 MB).
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "%sf%d", (i ? ";" : ""), i; print " 5" }' >"$T/deep.folded"
"$AIFLAME" report -q "$T/deep.folded" --max-depth 8 --format folded >"$T/deep.out" 2>"$T/err"
check "--max-depth 8 on a 200,000-frame folded stack: 8 frames" '[ $? -eq 0 ] && [ "$(cat "$T/deep.out")" = "f0;f1;f2;f3;f4;f5;f6;f7 5" ]'
printf 'app;py::step (t.py:3);at::mm;-;gemm;selected 4\n' >"$T/kinds.folded"
"$AIFLAME" report -q --plain --format folded --no-python "$T/kinds.folded" >"$T/np.out" && "$AIFLAME" report -q --plain --format folded --no-native "$T/kinds.folded" >"$T/nn.out"
check "--no-python and --no-native on folded input" 'grep -qx "app;at::mm;-;gemm;selected 4" "$T/np.out" && grep -qx "app;step (t.py:3);-;gemm;selected 4" "$T/nn.out"'
# pprof of names that are not UTF-8: no libprotobuf ERROR line, even under -q (issue #68 item 8).
printf 'app;bad\xff\xfename;-;k;selected 3\n' >"$T/bad_utf8.folded"
"$AIFLAME" report -q "$T/bad_utf8.folded" --format pprof -o "$T/bad_utf8.pb" 2>"$T/err"
check "pprof of non-UTF-8 names: written, nothing on stderr" '[ $? -eq 0 ] && [ -s "$T/bad_utf8.pb" ] && [ ! -s "$T/err" ]'
# An output that cannot be created is found before the input is read: a FIFO nobody writes would
# block the report for ever if it were opened first.
mkfifo "$T/never.fifo"
timeout 20 "$AIFLAME" report -q "$T/never.fifo" -o "$T/no/such/dir/x.svg" 2>"$T/err"
rc=$?
check "an uncreatable output found before reading the input (rc $rc)" '[ $rc -eq 2 ] && grep -q "cannot create .*no/such/dir" "$T/err"'

# Output failures are said; a killed report leaves no temporary file.
"$AIFLAME" report -q "$FIX" >/dev/full 2>"$T/err"
rc=$?
check "> /dev/full: status 1 and a message" '[ $rc -eq 1 ] && grep -q "standard output" "$T/err"'
"$AIFLAME" diff -q "$FIX" "$UNFIN" >/dev/full 2>"$T/err"
rc=$?
check "diff > /dev/full: status 1 and a message" '[ $rc -eq 1 ] && grep -q "standard output" "$T/err"'
mkdir "$T/outdir"
(ulimit -f 1; exec "$AIFLAME" report -q "$FIX" -o "$T/outdir/big.svg") 2>/dev/null
wait 2>/dev/null
check "report killed mid-write (SIGXFSZ): no temporary file left" '[ -z "$(ls -A "$T/outdir")" ]'
(ulimit -f 1; trap "" XFSZ; exec "$AIFLAME" report -q "$FIX" -o "$T/outdir/big.svg") 2>"$T/err"
rc=$?
check "-o on a full disk: status 1, one line" '[ $rc -eq 1 ] && [ "$(lines "$T/err")" -eq 1 ] && grep -q "writing" "$T/err" && [ -z "$(ls -A "$T/outdir")" ]'

# A directory is read as strictly as its files (issue #68 item 5): an empty or foreign member is
# named; a damaged member is named and the rest drawn, status 4 (before: one bad member of 101 failed
# the whole report, with no output); a member cut short gets its note.
mkdir "$T/dir"
cp "$FIX" "$T/dir/a.aiflame" && cp "$FIX" "$T/dir/b.aiflame" && : >"$T/dir/empty.aiflame"
cp "$SRC/tests/data/demo_matmul.folded" "$T/dir/notes.txt"
cp "$FIX" "$T/dir/flipped.aiflame" && printf '\xff' | dd of="$T/dir/flipped.aiflame" bs=1 seek=200 conv=notrunc 2>/dev/null
head -c 40 "$FIX" >"$T/dir/cut.aiflame"
"$AIFLAME" report "$T/dir" -o "$T/dir.folded" 2>"$T/err"
rc=$?
check "directory with a damaged member: status 4, the rest written" '[ $rc -eq 4 ] && [ -s "$T/dir.folded" ]'
check "directory: the damaged member named, left out" 'grep -q "flipped.aiflame.*left out of the picture" "$T/err"'
check "directory: the empty member named" 'grep -q "empty.aiflame: an empty file" "$T/err"'
check "directory: the foreign member named" 'grep -q "notes.txt: not an aiflame profile" "$T/err"'
check "directory: the member cut short has its note" 'grep -q "cut.aiflame: the profile was cut short" "$T/err"'
"$AIFLAME" report -q "$T/dir/a.aiflame" "$T/dir/b.aiflame" -o "$T/two.folded"
check "directory: the readable members drawn as when named" 'cmp -s "$T/two.folded" "$T/dir.folded"'
"$AIFLAME" report -q "$T/dir/a.aiflame" "$T/dir/flipped.aiflame" -o "$T/named.folded" 2>"$T/err"
check "a damaged file named on the command line still fails the report (status 1)" '[ $? -eq 1 ] && [ ! -e "$T/named.folded" ]'

# Filters that match nothing: a warning naming them, status 3.
for filter in "--stalls bogus" "--devices 7" "--pids rank_99"; do
  "$AIFLAME" report "$FIX" $filter -o "$T/f.folded" --force 2>"$T/err"
  rc=$?
  word=${filter%% *}
  check "$filter: warning naming it, status 3" '[ $rc -eq 3 ] && grep -q "warning.*${word}" "$T/err"'
  # diff loads its two sides through report's pipeline: the same check, one warning per side, no output.
  "$AIFLAME" diff "$FIX" "$UNFIN" $filter -o "$T/fd.folded" 2>"$T/err"
  rc=$?
  check "diff $filter: warning per side naming it, status 3, nothing written" \
    '[ $rc -eq 3 ] && [ "$(grep -c "warning: \(BEFORE\|AFTER\) .*${word}" "$T/err")" -eq 2 ] && [ ! -e "$T/fd.folded" ]'
done
"$AIFLAME" diff "$FIX" "$UNFIN" --stalls selected,bogus -o "$T/fd.folded" 2>"$T/err"
rc=$?
check "diff: one filter item matching nothing is named, the diff is written" \
  '[ $rc -eq 0 ] && grep -q "warning: BEFORE .*--stalls bogus" "$T/err" && [ -s "$T/fd.folded" ]'

"$AIFLAME" --bogus 2>"$T/err"
check "--bogus named" 'grep -q "unknown option .--bogus." "$T/err"'

finish reliability
