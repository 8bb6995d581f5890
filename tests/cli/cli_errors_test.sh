#!/usr/bin/env bash
# Every documented error path of the CLI: one line on stderr, a non-zero exit below 128 (no crash),
# and no partial output file.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

expect_error() {  # expect_error NAME EXPECTED_SUBSTRING CMD...
  local name=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  local lines
  lines=$(grep -c '' "$T/err")
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || ! grep -q -- "$want" "$T/err" || [ "$lines" -ne 1 ]; then
    echo "FAIL $name: rc=$rc lines=$lines stderr: $(cat "$T/err")"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

printf '' >"$T/empty.aiflame"
printf 'hello, this is not a profile\n' >"$T/foreign.aiflame"
printf 'AIFLAME\0\x63\0\0\0\0\0\0\0' >"$T/future.aiflame"
head -c 40 "$SRC/tests/data/demo_matmul.aiflame" >"$T/cut.aiflame"
cp "$SRC/tests/data/demo_matmul.aiflame" "$T/flipped.aiflame"
printf '\xff' | dd of="$T/flipped.aiflame" bs=1 seek=200 conv=notrunc 2>/dev/null

expect_error missing "No such file" "$AIFLAME" report "$T/nope.aiflame"
expect_error empty "empty file" "$AIFLAME" report "$T/empty.aiflame"
expect_error foreign "not an aiflame profile" "$AIFLAME" report "$T/foreign.aiflame"
expect_error future "upgrade aiflame" "$AIFLAME" report "$T/future.aiflame"
expect_error flipped "corrupt" "$AIFLAME" report "$T/flipped.aiflame" -q
mkdir "$T/baddir" && cp "$T/flipped.aiflame" "$T/future.aiflame" "$T/baddir/"
expect_error directory_of_damaged_profiles "no profile could be read; the first: .*checksum" "$AIFLAME" report "$T/baddir"
expect_error bad_extension "use --format" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" -q -o "$T/out.pdf"
expect_error bad_format "format" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" --format pdf
expect_error unwritable "cannot create" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" -q -o "$T/no/such/dir/x.svg"
expect_error no_command "command" "$AIFLAME" record -o "$T/r.data"
expect_error bad_period "--period" "$AIFLAME" record --period 99 -o "$T/r.data" -- true
expect_error bad_pc_mode "--pc-mode" "$AIFLAME" record --pc-mode sometimes -o "$T/w.data" -- true
expect_error windows_mode "AIFLAME_EXPERIMENTAL=1" env -u AIFLAME_EXPERIMENTAL "$AIFLAME" record --pc-mode windows -o "$T/w.data" -- true
expect_error no_subcommand "subcommand" "$AIFLAME"
# Issue #68 item 8: one clear line for every bad value, whichever way it comes.
for v in 0 "" garbage 2; do
  expect_error "windows_mode_EXPERIMENTAL=$v" "AIFLAME_EXPERIMENTAL" env AIFLAME_EXPERIMENTAL="$v" "$AIFLAME" record --pc-mode windows -o "$T/w.data" -- true
done
check "AIFLAME_EXPERIMENTAL=0 or empty: windows mode stays locked" 'env AIFLAME_EXPERIMENTAL=0 "$AIFLAME" record --pc-mode windows -o "$T/w.data" -- true 2>&1 | grep -q "is experimental"'
expect_error debug_garbage "AIFLAME_DEBUG takes 0 or 1, not 'garbage'" env AIFLAME_DEBUG=garbage "$AIFLAME" record -o "$T/w.data" -- sh -c 'echo ran'
check "AIFLAME_DEBUG=garbage: the program not run" '[ ! -s "$T/out" ]'
expect_error report_threads_garbage "AIFLAME_REPORT_THREADS takes a number" env AIFLAME_REPORT_THREADS=garbage "$AIFLAME" report -q "$SRC/tests/data/demo_matmul.aiflame"
expect_error report_threads_zero "AIFLAME_REPORT_THREADS takes a number" env AIFLAME_REPORT_THREADS=0 "$AIFLAME" report -q "$SRC/tests/data/demo_matmul.aiflame"
env AIFLAME_REPORT_THREADS=1 AIFLAME_DEBUG=0 "$AIFLAME" report -q "$SRC/tests/data/demo_matmul.aiflame" >"$T/out" 2>"$T/err"
check "AIFLAME_REPORT_THREADS=1, AIFLAME_DEBUG=0: taken" '[ $? -eq 0 ] && [ -s "$T/out" ] && [ ! -s "$T/err" ]'
expect_error pid_zero "takes process ids (1 or more), not '0'" "$AIFLAME" record --pid 0 -o "$T/w.data"
expect_error duration_negative "takes seconds (0 or more), not '-1'" "$AIFLAME" record --pid 1 --duration -1 -o "$T/w.data"
check "--pid 0: no 309-digit range" '! grep -Eq "[0-9]{20}" "$T/err"'
expect_error lib_missing "--lib /nonexistent.so: no such file" "$AIFLAME" record --lib /nonexistent.so -o "$T/w.data" -- true
expect_error lib_env_missing "AIFLAME_LIB=/nonexistent.so: no such file" env AIFLAME_LIB=/nonexistent.so "$AIFLAME" record -o "$T/w.data" -- true
expect_error bad_nvdisasm "--nvdisasm" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" --nvdisasm /no/such/nvdisasm -o "$T/n.folded"
expect_error bad_stall_reasons "stall-reasons" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" --stall-reasons some -o "$T/s.folded"

# A profile cut short is readable: reported, with a note, exit 0.
"$AIFLAME" report "$T/cut.aiflame" -o "$T/cut.folded" 2>"$T/err"
if [ $? -ne 0 ] || ! grep -q "cut short" "$T/err"; then echo "FAIL cut: $(cat "$T/err")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
# Cut right after its header, it holds no sample: said so, never "100.00% of GPU samples attributed" (#68).
check "cut after the header: says no samples" 'grep -q "no GPU samples in this profile" "$T/err" && ! grep -q "% of GPU samples attributed" "$T/err"'

# Running a command that does not exist: exit 127 like a shell, one line.
"$AIFLAME" record -o "$T/r.data" -- /no/such/program 2>"$T/err"
rc=$?
if [ $rc -ne 127 ] || ! grep -q "cannot run" "$T/err"; then echo "FAIL exec: rc=$rc $(cat "$T/err")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# A command that exists but cannot be executed: 126, as a shell says it (issue #68: it was 127).
printf 'not a program\n' >"$T/not_executable" && chmod 644 "$T/not_executable"
for cmd in "$T/not_executable" "$T"; do
  "$AIFLAME" record -q -o "$T/r.data" -- "$cmd" 2>"$T/err"
  rc=$?
  check "not executable ($(basename "$cmd")): 126, one line" '[ $rc -eq 126 ] && [ "$(grep -c "" "$T/err")" -eq 1 ] && grep -q "cannot run" "$T/err"'
done

# report never overwrites its own input, whatever name reaches it (issue #68: `report P -o P -f` did).
cp "$SRC/tests/data/demo_matmul.aiflame" "$T/self.aiflame" && ln "$T/self.aiflame" "$T/self_hardlink.folded" && ln -s "$T/self.aiflame" "$T/self_symlink.aiflame"
expect_error output_is_input "does not overwrite what it reads" "$AIFLAME" report -q "$T/self.aiflame" -o "$T/self.aiflame" -f --format folded
expect_error output_is_input_hardlink "does not overwrite what it reads" "$AIFLAME" report -q "$T/self.aiflame" -o "$T/self_hardlink.folded" -f
expect_error output_is_input_via_link "does not overwrite what it reads" "$AIFLAME" report -q "$T/self_symlink.aiflame" -o "$T/self.aiflame" -f --format folded
mkdir "$T/selfdir" && cp "$SRC/tests/data/demo_matmul.aiflame" "$T/selfdir/p.aiflame"
expect_error output_is_directory_member "does not overwrite what it reads" "$AIFLAME" report -q "$T/selfdir" -o "$T/selfdir/p.aiflame" -f --format folded
expect_error diff_output_is_input "does not overwrite what it reads" "$AIFLAME" diff -q "$T/self.aiflame" "$SRC/tests/data/demo_matmul.aiflame" -o "$T/self_hardlink.folded" -f
check "the input is untouched" 'cmp -s "$T/self.aiflame" "$SRC/tests/data/demo_matmul.aiflame" && cmp -s "$T/selfdir/p.aiflame" "$SRC/tests/data/demo_matmul.aiflame"'
rm -f "$T/self_hardlink.folded" "$T/self_symlink.aiflame"

# Output files in shared directories: an existing file needs --force, a symlink is never written through.
FIX="$SRC/tests/data/demo_matmul.aiflame"
echo old >"$T/exists.folded"
expect_error exists_needs_force "pass --force" "$AIFLAME" report "$FIX" -q -o "$T/exists.folded"
check "existing file kept without --force" 'grep -qx old "$T/exists.folded"'
"$AIFLAME" report "$FIX" -q --force --annotate -o "$T/exists.folded"
check "--force overwrites" '[ $? -eq 0 ] && cmp -s "$T/exists.folded" "$SRC/tests/data/demo_matmul.folded"'
echo secret >"$T/victim"
ln -s "$T/victim" "$T/link.svg"
expect_error symlink_refused "symbolic link" "$AIFLAME" report "$FIX" -q -o "$T/link.svg"
expect_error symlink_refused_with_force "symbolic link" "$AIFLAME" report "$FIX" -q --force -o "$T/link.svg"
ln -s "$T/nowhere" "$T/dangling.folded"
expect_error dangling_symlink_refused "symbolic link" "$AIFLAME" report "$FIX" -q -o "$T/dangling.folded"
check "symlink target untouched" 'grep -qx secret "$T/victim" && [ ! -e "$T/nowhere" ] && [ -L "$T/link.svg" ]'
"$AIFLAME" diff "$FIX" "$FIX" -q -o "$T/d.folded" && echo old >"$T/d.folded"
expect_error diff_exists_needs_force "pass --force" "$AIFLAME" diff "$FIX" "$FIX" -q -o "$T/d.folded"
"$AIFLAME" diff "$FIX" "$FIX" -q --force -o "$T/d.folded"
check "diff --force overwrites" '[ $? -eq 0 ] && ! grep -qx old "$T/d.folded"'
# record refuses a symlink at its output path, as report does: never followed, moved nor deleted.
ln -s "$T/victim" "$T/rec.data"
expect_error record_symlink_refused "symbolic link" "$AIFLAME" record -q -o "$T/rec.data" -- true
check "record does not follow nor move a symlink" 'grep -qx secret "$T/victim" && [ -L "$T/rec.data" ] && [ ! -e "$T/rec.data.old" ]'

# No partial output was left anywhere (temporary files are named OUTPUT.XXXXXX).
if ls "$T" | grep -Eq '\.tmp\.|\.(svg|folded)\.[A-Za-z0-9]{6}$'; then echo "FAIL: temporary files left: $(ls "$T")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

finish cli_errors
