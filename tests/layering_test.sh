#!/usr/bin/env bash
# The layers of src/ (docs/architecture.md): each directory includes only from the layers beneath it.
#   util, profile          the ground: the data model and file format
#   flame                  the flame-graph model (frames, names, lists, totals, merge, filter, fold)
#   record                 the injection library (profile only)
#   symbolize              native and GPU symbols (profile)
#   attribute              samples to frames (profile, symbolize, flame)
#   input, output          readers and writers of pictures (flame only; never each other, never attribute)
#   report                 one path from inputs to a picture (all of the above but record)
#   cli                    the commands, on top
# Usage: layering_test.sh SRC_DIR. Fails naming every include that breaks a rule.
set -u
src=${1:?usage: layering_test.sh SRC_DIR}
declare -A allowed=(
  [util]="util"
  [profile]="profile util"
  [flame]="flame util"
  [record]="record profile util"
  [symbolize]="symbolize profile util"
  [attribute]="attribute symbolize flame profile util"
  [input]="input flame util"
  [output]="output flame util"
  [report]="report input output attribute symbolize flame profile util"
  [cli]="cli report input output attribute symbolize flame profile record util"
)
fail=0
checked=0
for dir in "$src"/*/; do
  layer=$(basename "$dir")
  if [ -z "${allowed[$layer]+x}" ]; then
    echo "FAIL: src/$layer is no layer of tests/layering_test.sh; add it there and to docs/architecture.md"
    fail=$((fail + 1))
    continue
  fi
  while IFS=: read -r file line text; do
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$text")
    checked=$((checked + 1))
    if ! grep -qw -- "$target" <<<"${allowed[$layer]}"; then
      echo "FAIL: ${file#"$src"/}:$line includes $target/ ($layer/ may include only: ${allowed[$layer]})"
      fail=$((fail + 1))
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$dir" --include='*.h' --include='*.cpp')
done
# The lab (record/measure/: the launch path's measurement instruments) stands above the product parts of
# record/: no product file includes it but the hooks that call an instrument today, listed here; a new
# one fails. (Recorder's measured launch and the capture's counters still live in those files.)
measure_hooks="record/recorder.h record/recorder.cpp record/stack_capture.cpp record/autograd/autograd_tracker.cpp
record/cupti/cupti_backend.h"
while IFS=: read -r file line text; do
  rel=${file#"$src"/}
  checked=$((checked + 1))
  case "$rel" in record/measure/*) continue ;; esac
  if ! grep -qxF -- "$rel" <<<"$(tr ' ' '\n' <<<"$measure_hooks")"; then
    echo "FAIL: $rel:$line includes record/measure/ (only the lab and its hooks may: $measure_hooks)"
    fail=$((fail + 1))
  fi
done < <(grep -rnE '^#include "record/measure/' "$src" --include='*.h' --include='*.cpp')
echo "layering: $checked includes checked, $fail broken"
[ "$fail" -eq 0 ] && [ "$checked" -gt 0 ]
