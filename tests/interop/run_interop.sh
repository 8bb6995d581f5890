#!/usr/bin/env bash
# Real clients read what aiflame writes: pprof-format decodes the pprof file, the speedscope app
# opens the speedscope file in headless Chromium. Needs `npm ci` in tests/interop and Debian's
# chromium; without them it is skipped (exit 77) locally and fails where CI or
# AIFLAME_REQUIRE_INTEROP is set.
set -u
AIFLAME=$1
SRC=$2
DIR="$SRC/tests/interop"
if [ ! -d "$DIR/node_modules/pprof-format" ] || [ ! -d "$DIR/node_modules/speedscope" ] || [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  msg="interop: needs 'npm ci' in tests/interop and chromium (apt-get install -y chromium)"
  if [ -n "${CI:-}" ] || [ -n "${AIFLAME_REQUIRE_INTEROP:-}" ]; then echo "FAIL $msg"; exit 1; fi
  echo "SKIP $msg"; exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
pass=0
check() {  # check NAME CMD...
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}
for input in "$SRC/tests/data/demo_matmul.aiflame" "$SRC/tests/data/gpt_train.aiflame" "$SRC/tests/data/iaprof_current.txt"; do
  base=$T/$(basename "$input" | tr . _)
  for ext in folded pb.gz speedscope.json; do
    "$AIFLAME" report "$input" -q -o "$base.$ext" || { echo "FAIL report $input -o .$ext"; fail=$((fail + 1)); }
  done
done
B=$T/demo_matmul_aiflame G=$T/gpt_train_aiflame I=$T/iaprof_current_txt
check pprof_demo node "$DIR/check_pprof.js" "$B.pb.gz" "$B.folded" matmul_basic multiply_basic main
check pprof_gpt node "$DIR/check_pprof.js" "$G.pb.gz" "$G.folded" cudaLaunchKernel
check pprof_iaprof node "$DIR/check_pprof.js" "$I.pb.gz" "$I.folded" multiply_basic main
check speedscope_demo node "$DIR/check_speedscope.js" "$B.speedscope.json" "$B.folded" matmul_basic multiply_basic \
  matmul_local_access_and_tiling main
check speedscope_iaprof node "$DIR/check_speedscope.js" "$I.speedscope.json" "$I.folded" multiply_basic active
# diff: the report's SVG with diff colours, its zoom and search in Chromium; a self-diff's boxes show.
D=$SRC/tests/data
"$AIFLAME" diff "$D/demo_matmul.aiflame" "$D/demo_matmul.aiflame" -q -o "$T/self.svg" || { echo "FAIL diff self"; fail=$((fail + 1)); }
"$AIFLAME" diff "$D/iaprof_interval.txt" "$D/iaprof_current.txt" -q -o "$T/iaprof.diff.svg" || { echo "FAIL diff iaprof"; fail=$((fail + 1)); }
check svg_diff_self node "$DIR/check_svg_diff.js" "$T/self.svg" matmul_basic matmul --self
check svg_diff_iaprof node "$DIR/check_svg_diff.js" "$T/iaprof.diff.svg" multiply_basic multiply
echo "interop: $pass passed, $fail failed"
exit $fail
