#!/usr/bin/env bash
# The HTML report in a real browser (Debian's chromium through playwright-core): the demo and
# gpt_train.py recordings, the rank/GPU selector on the two-rank DDP recording, hostile frame names,
# and a synthetic profile of 1,000,000 samples in 50,000 unique stacks that must be usable within 2 s.
# Screenshots of each state go to $SHOTS (default: a directory under the build tree). Skips (77)
# without npm packages or chromium, and fails instead where CI or AIFLAME_REQUIRE_INTEROP is set.
set -u
AIFLAME=$1
SRC=$2
SHOTS=${3:-$PWD/html_screenshots}
DIR="$SRC/tests/interop"
if [ ! -d "$DIR/node_modules/playwright-core" ] || [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  msg="html: needs 'npm ci' in tests/interop and chromium (apt-get install -y chromium)"
  if [ -n "${CI:-}" ] || [ -n "${AIFLAME_REQUIRE_INTEROP:-}" ]; then echo "FAIL $msg"; exit 1; fi
  echo "SKIP $msg"; exit 77
fi
mkdir -p "$SHOTS"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
run() { "$@" || fail=$((fail + 1)); }

for f in demo_matmul gpt_train; do
  "$AIFLAME" report "$SRC/tests/data/$f.aiflame" -q -o "$T/$f.html" || fail=$((fail + 1))
  "$AIFLAME" report "$SRC/tests/data/$f.aiflame" -q -o "$T/$f.folded" || fail=$((fail + 1))
done
# Launch sites: the demo's own functions; gpt_train.py's lines, never PyTorch's (bench/workloads/gpt_train.py).
run node "$DIR/check_html.js" "$T/demo_matmul.html" "$T/demo_matmul.folded" "$SHOTS" matmul_basic long_scoreboard '^(main|multiply_\w+)$'
run node "$DIR/check_html.js" "$T/gpt_train.html" "$T/gpt_train.folded" "$SHOTS" "step (gpt_train.py:19)" "gemm" ' \(gpt_train\.py:[0-9]+\)$'
# Issue #23's recordings (tests/data/backward/): with the autograd tracking, every sample has a launch
# site in the training script, backward kernels included, and every top kernel names one; without it
# (AIFLAME_AUTOGRAD=0) autograd's kernels have none, which the same check must catch.
B=$SRC/tests/data/backward
for w in gpt_train:20 hf_gpt2:12 resnet_train:9; do
  name=${w%%:*}
  for m in on off; do
    "$AIFLAME" report "$B/${name}_autograd_$m.aiflame" -q -o "$T/${name}_$m.html" || fail=$((fail + 1))
    "$AIFLAME" report "$B/${name}_autograd_$m.aiflame" -q -o "$T/${name}_$m.folded" || fail=$((fail + 1))
  done
  run node "$DIR/check_html.js" "$T/${name}_on.html" "$T/${name}_on.folded" "$SHOTS" "step ($name.py:${w#*:})" "gemm" " \\($name\\.py:[0-9]+\\)\$" 99.9
done
if node "$DIR/check_html.js" "$T/hf_gpt2_off.html" "$T/hf_gpt2_off.folded" "$SHOTS" "step (hf_gpt2.py:12)" "gemm" ' \(hf_gpt2\.py:[0-9]+\)$' 99.9 2>"$T/off.err" ||
   ! grep -q 'top launch site "-"' "$T/off.err"; then
  echo "FAIL html: hf_gpt2 without the autograd tracking passed the launch-site check: $(cat "$T/off.err")"
  fail=$((fail + 1))
fi


# Two ranks of a DDP job (and torchrun's agent): the rank/GPU selector against the folded output
# filtered to rank 0 and to GPU 0.
"$AIFLAME" report "$SRC/tests/data/ddp" -q -o "$T/ddp.html" || fail=$((fail + 1))
"$AIFLAME" report "$SRC/tests/data/ddp" -q --pids 'rank 0' --group-by rank -o "$T/ddp_rank0.folded" || fail=$((fail + 1))
"$AIFLAME" report "$SRC/tests/data/ddp" -q --devices 0 -o "$T/ddp_gpu0.folded" || fail=$((fail + 1))
run node "$DIR/check_html.js" --ranks "$T/ddp.html" "$SHOTS" "$T/ddp_rank0.folded" "$T/ddp_gpu0.folded"

# Hostile names: markup, quotes, ampersands, a newline-free 100 KB template, invalid UTF-8.
python3 - "$T/hostile.folded" <<'PY'
import sys
long = "std::vector<" * 2000 + "int" + ">" * 2000
lines = [
    b"<script>alert(1)</script>;a&b \"quoted\" 'single';-;kern<el>;0x10;stall 5",
    ("proc;" + long + ";-;k;0x20;long_scoreboard 3").encode(),
    b"proc;bad\xff\xfeutf8;-;k;0x30;selected 2",
]
open(sys.argv[1], "wb").write(b"\n".join(lines) + b"\n")
PY
"$AIFLAME" report "$T/hostile.folded" -q --title '<script>alert("t")</script> & co' -o "$T/hostile.html" || fail=$((fail + 1))
run node "$DIR/check_html.js" --hostile "$T/hostile.html" "$SHOTS"

# A million samples in 50,000 unique stacks of 30 frames.
python3 - "$T/big.folded" <<'PY'
import random, sys
random.seed(7)
out = []
left = 1000000
for i in range(50000):
    depth = 24
    frames = ["python3", "1234"] + ["f%d_%d" % (d, random.randrange(6)) for d in range(depth)] + \
             ["-", "kernel_%d" % (i % 300), "0x%x" % (16 * random.randrange(64)), "stall_%d" % random.randrange(12)]
    n = 20 if i < 49999 else left
    left -= n
    out.append(";".join(frames) + " %d" % n)
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
"$AIFLAME" report "$T/big.folded" -q -o "$T/big.html" || fail=$((fail + 1))
size=$(stat -c %s "$T/big.html")
echo "html: synthetic report is $size bytes"
[ "$size" -le $((8 * 1024 * 1024)) ] || { echo "FAIL big.html is $size bytes"; fail=$((fail + 1)); }
run node "$DIR/check_html.js" --timed "$T/big.html" "$SHOTS" 2000
echo "html: $fail failed; screenshots in $SHOTS"
exit $fail
