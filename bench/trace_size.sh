#!/usr/bin/env bash
# The Chrome/Perfetto trace of a real run (issue #26): records CMD, writes the trace with the
# binary given, prints its size and the previous format's (launch stacks in every event) if a second
# binary is given, and checks its structure (tests/interop/check_trace.py).
# Usage (repo root, GPU machine): bash bench/trace_size.sh AIFLAME [OLD_AIFLAME] -- CMD...
# e.g. bash bench/trace_size.sh .dist/aiflame -- python3 bench/workloads/gpt_train.py
set -euo pipefail
AIFLAME=$1; shift
OLD=""
if [ "$1" != "--" ]; then OLD=$1; shift; fi
shift  # --
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$AIFLAME" record -q -o "$T/run.aiflame" -- "$@"
"$AIFLAME" report "$T/run.aiflame" -q -o "$T/new.trace.json"
echo "trace (interned stacks, launch slices, flows): $(stat -c %s "$T/new.trace.json") bytes"
if [ -n "$OLD" ]; then
  "$OLD" report "$T/run.aiflame" -q -o "$T/old.trace.json"
  echo "trace of $OLD: $(stat -c %s "$T/old.trace.json") bytes"
fi
python3 "$(dirname "$0")/../tests/interop/check_trace.py" "$AIFLAME" "$(dirname "$0")/.." "$T/run.aiflame"
