#!/usr/bin/env bash
# `aiflame demo` without a GPU renders the bundled H100 recording and says so.
set -u
AIFLAME=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
"$AIFLAME" demo --bundled 2>err
rc=$?
fail=0
[ $rc -eq 0 ] || { echo "FAIL rc=$rc: $(cat err)"; fail=1; }
grep -q "bundled H100 recording" err || { echo "FAIL: no notice on stderr: $(cat err)"; fail=1; }
grep -q "matmul_basic" demo.folded || { echo "FAIL: demo.folded lacks matmul_basic"; fail=1; }
# The SVG parses as XML and holds a frame for each kernel and each host function that launched one.
python3 "$SRC/tests/output/check_svg.py" demo.svg matmul_basic matmul_local_access matmul_local_access_and_tiling \
  multiply_basic multiply_local_access multiply_local_access_and_tiling main cudaLaunchKernel \
  || { echo "FAIL: demo.svg is not XML with the expected frames"; fail=1; }
[ $fail -eq 0 ] && echo "demo_bundled: 1 passed, 0 failed"
exit $fail
