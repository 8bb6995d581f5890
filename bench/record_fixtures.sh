#!/usr/bin/env bash
# Records the committed test fixtures on the GPU machine (tests/data/*.aiflame come from here).
# Usage: OUT=dir bench/record_fixtures.sh
set -eu
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
# The demo: 20 iterations of each kernel, 2048x2048.
"$bin/aiflame" record --force -o "$out/demo_matmul.aiflame" -- "$bin/aiflame_demo_matmul" 20
# gpt_train.py: 3 steps after its warm-up, sampled sparsely to keep the fixture small; no cubins
# (PyTorch's are tens of MB).
STEPS=3 "$bin/aiflame" record --force --period 24 --no-cubins -o "$out/gpt_train.aiflame" -- python3 bench/workloads/gpt_train.py
# A Triton kernel (its GPU frames carry triton_loop.py's lines), sampled densely for a short loop.
STEPS=3000 "$bin/aiflame" record --force --period 19 -o "$out/triton_loop.aiflame" -- python3 bench/workloads/triton_loop.py
ls -la "$out"
