#!/usr/bin/env bash
# `aiflame record` on a machine without a GPU, or of a program that makes no CUDA call: the program
# runs to completion with its own exit status and output, and aiflame says why there is no profile.
set -u
AIFLAME=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$AIFLAME" record -o "$T/p.data" -- sh -c 'echo program-output; exit 3' >"$T/out" 2>"$T/err"
rc=$?
check "exit status passed through" '[ $rc -eq 3 ]'
check "program output kept" 'grep -q program-output "$T/out"'
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  # A driver but no CUDA call: nothing to profile, no file.
  check "explains the missing profile" 'grep -q "no profile was written" "$T/err"'
  check "no file written" '[ ! -e "$T/p.data" ]'
else
  # No driver (CI): one line naming the fix, and an empty profile that says the same when reported.
  check "one line names the missing driver" '[ "$(grep -c "" "$T/err")" -eq 1 ] && grep -q "install the NVIDIA driver" "$T/err"'
  "$AIFLAME" report "$T/p.data" -o "$T/p.folded" 2>"$T/rerr"
  check "empty profile readable" '[ $? -eq 0 ] && [ ! -s "$T/p.folded" ] && grep -q "recorded warning: no NVIDIA driver" "$T/rerr"'
  rm -f "$T/p.data"
  # --require-profile: nothing can be recorded without a driver, so the program is not started.
  "$AIFLAME" record --require-profile -o "$T/p.data" -- sh -c 'echo ran' >"$T/out" 2>"$T/err"
  rc=$?
  check "--require-profile without a driver: not run, status 2, one line" \
    '[ $rc -eq 2 ] && [ ! -s "$T/out" ] && [ "$(grep -c "" "$T/err")" -eq 1 ] && grep -q "no NVIDIA driver.*not started" "$T/err" && [ ! -e "$T/p.data" ]'
fi

# Signals reach the program: a TERM to aiflame ends the child, whose status comes back.
"$AIFLAME" record -o "$T/p.data" -- sh -c 'trap "exit 42" TERM; sleep 5 & wait' 2>/dev/null &
apid=$!
sleep 0.5
kill -TERM $apid
wait $apid
rc=$?
check "TERM forwarded to the program" '[ $rc -eq 42 ]'

# An existing output is rotated to .old, never overwritten without --force.
echo keep >"$T/q.data"
"$AIFLAME" record -o "$T/q.data" -- true 2>/dev/null
check "rotated to .old" 'grep -q keep "$T/q.data.old"'

# The library's options travel in the variables of their schema (src/record/record_options.cpp): the
# flags given, and the absolute output path with this run's own suffix (issue #25).
(cd "$T" && "$AIFLAME" record -q --unwind off --no-python --period default -o rel.data -- sh -c 'env | grep ^AIFLAME_' \
  >"$T/env" 2>/dev/null)
check "options handed over in their variables" \
  'grep -qx AIFLAME_UNWIND=off "$T/env" && grep -qx AIFLAME_PYTHON=0 "$T/env" && grep -qx AIFLAME_PERIOD=default "$T/env" &&
   grep -q "^AIFLAME_OUTPUT=$T/rel.data.rec-" "$T/env" && grep -qx AIFLAME_QUIET=1 "$T/env"'

finish record_without_gpu
