#!/usr/bin/env bash
# Records the autograd fixtures of issue #23 on the GPU machine (tests/data/backward/ come from here):
# gpt_train.py, hf_gpt2.py and resnet_train.py, a few steps each, sampled sparsely and without cubins
# to stay small; each with the autograd tracking on (the default) and off (AIFLAME_AUTOGRAD=0: the
# picture before issue #23, for docs/examples).
# Usage: OUT=dir bench/record_backward_fixtures.sh     Env: AIFLAME_BIN (.dist), STEPS (3), PERIOD (24)
set -u
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}/backward
mkdir -p "$out"
export PYTHONUNBUFFERED=1
for w in gpt_train hf_gpt2 resnet_train; do
  for mode in on off; do
    ag=1; [ $mode = off ] && ag=0
    AIFLAME_AUTOGRAD=$ag STEPS=${STEPS:-3} "$bin/aiflame" record --force --period "${PERIOD:-24}" --no-cubins --sass-timeout 0 \
      -o "$out/${w}_autograd_$mode.aiflame" -- python3 "bench/workloads/$w.py" >"$out/${w}_$mode.log" 2>&1
    echo "$w autograd $mode: exit $? $(grep -E 'GPU samples|autograd' "$out/${w}_$mode.log" | head -2 | tr '\n' ' ')"
  done
done
ls -la "$out"
