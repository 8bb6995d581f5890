#!/usr/bin/env bash
# Issue #21 on the GPU machine: the injection library through its GPU-backend seam and option schema
# records as before, a bad option value gives one warning naming it, and two fresh recordings of one
# program diff stack for stack (processes matched by program, not pid).
# Usage (repo root, binaries in .dist/): bash bench/backend_seam_check.sh
set -u
bin=${AIFLAME_BIN:-.dist}
A=$bin/aiflame
D=$bin/aiflame_demo_matmul
t=$(mktemp -d)
pass=0; fail=0
check() { if eval "$2"; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); fi; }

$A record -f -o $t/a.aiflame -- $D >$t/a.out 2>$t/a.err; rc=$?
cat $t/a.err
check "record exits 0" '[ $rc -eq 0 ]'
check "GPU samples and kernels recorded" 'grep -qE "[1-9][0-9]* GPU samples" $t/a.err && grep -qE "[1-9][0-9]* kernels" $t/a.err'
check "no warning" '! grep -q "aiflame: recorded warning" $t/a.err'

AIFLAME_PERIOD=fast AIFLAME_PERIDO=20 $A record -f -o $t/b.aiflame -- $D >$t/b.out 2>$t/b.err; rc=$?
check "bad value: exit 0" '[ $rc -eq 0 ]'
check "bad value: one line naming it" '[ "$(grep -c "AIFLAME_PERIOD=fast is not valid" $t/b.err)" -ge 1 ]'
check "unknown variable named" 'grep -q "AIFLAME_PERIDO=20 is not an aiflame option" $t/b.err'
check "bad value: still sampled at the default period" 'grep -qE "[1-9][0-9]* GPU samples" $t/b.err'

$A diff $t/a.aiflame $t/b.aiflame -o $t/d.folded 2>$t/d.err
cat $t/d.err
share=$(awk '{b += $(NF-1); a += $NF; if ($(NF-1) > 0 && $NF > 0) { sb += $(NF-1); sa += $NF } }
             END { printf "%.3f %.3f", (b ? sb / b : 0), (a ? sa / a : 0) }' $t/d.folded)
echo "diff share of samples' stacks (before, after): $share"
check "two recordings share >= 90% of their samples' stacks" \
  'awk -v s="$share" "BEGIN { split(s, x, \" \"); exit !(x[1] >= 0.9 && x[2] >= 0.9) }"'
check "diff: no 'share little' note" '! grep -q "share little" $t/d.err'
echo "backend_seam_check: $pass passed, $fail failed"
rm -rf "$t"
[ "$fail" -eq 0 ]
