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
expect_error directory "aiflame:" "$AIFLAME" report "$T"
expect_error bad_extension "use --format" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" -q -o "$T/out.pdf"
expect_error bad_format "format" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" --format pdf
expect_error unwritable "cannot create" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" -q -o "$T/no/such/dir/x.svg"
expect_error no_command "command" "$AIFLAME" record -o "$T/r.data"
expect_error bad_period "--period" "$AIFLAME" record --period 99 -o "$T/r.data" -- true
expect_error bad_pc_mode "--pc-mode" "$AIFLAME" record --pc-mode sometimes -o "$T/w.data" -- true
expect_error windows_mode "AIFLAME_EXPERIMENTAL=1" env -u AIFLAME_EXPERIMENTAL "$AIFLAME" record --pc-mode windows -o "$T/w.data" -- true
expect_error no_subcommand "subcommand" "$AIFLAME"
expect_error bad_nvdisasm "--nvdisasm" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" --nvdisasm /no/such/nvdisasm -o "$T/n.folded"
expect_error bad_stall_reasons "stall-reasons" "$AIFLAME" report "$SRC/tests/data/demo_matmul.aiflame" --stall-reasons some -o "$T/s.folded"

# A profile cut short is readable: reported, with a note, exit 0.
"$AIFLAME" report "$T/cut.aiflame" -o "$T/cut.folded" 2>"$T/err"
if [ $? -ne 0 ] || ! grep -q "cut short" "$T/err"; then echo "FAIL cut: $(cat "$T/err")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# Running a command that does not exist: exit 127 like a shell, one line.
"$AIFLAME" record -o "$T/r.data" -- /no/such/program 2>"$T/err"
rc=$?
if [ $rc -ne 127 ] || ! grep -q "cannot run" "$T/err"; then echo "FAIL exec: rc=$rc $(cat "$T/err")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

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
# record moves a symlink at its output path aside (to .old) instead of following it.
ln -s "$T/victim" "$T/rec.data"
"$AIFLAME" record -q -o "$T/rec.data" -- true 2>/dev/null
check "record does not follow a symlink" 'grep -qx secret "$T/victim" && [ -L "$T/rec.data.old" ]'

# No partial output was left anywhere (temporary files are named OUTPUT.XXXXXX).
if ls "$T" | grep -Eq '\.tmp\.|\.(svg|folded)\.[A-Za-z0-9]{6}$'; then echo "FAIL: temporary files left: $(ls "$T")"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

finish cli_errors
