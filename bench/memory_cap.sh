#!/usr/bin/env bash
# Memory cap of a long recorded run (issue #7), on the GPU machine, at default settings:
# gpt_train.py under `aiflame record` for MINUTES (default 8), resident memory sampled every 15 s,
# against the same program without aiflame. The stated cap:
#   - aiflame adds at most CAP_MB (default 1024) of resident memory over the plain run, and
#   - after the first minute the recorded process grows by at most GROWTH_MB (default 64).
# Prints the series and PASS/FAIL; exit status 1 on FAIL.
# Env: AIFLAME_BIN (default .dist), OUT (scratch dir, default /tmp).
set -u
minutes=${1:-8}
cap_mb=${CAP_MB:-1024}
growth_mb=${GROWTH_MB:-64}
bin=${AIFLAME_BIN:-.dist}
out=${OUT:-/tmp}
mkdir -p "$out" || exit 1
rss_of() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
pid_of() { pgrep -f "^python3 bench/workloads/gpt_train.py" | head -1; }

# The plain program's resident memory once its training loop runs (at 45 s).
STEPS=100000 python3 bench/workloads/gpt_train.py >/dev/null 2>&1 &
sleep 45
plain=$(rss_of "$(pid_of)")
kill "$(pid_of)" 2>/dev/null; wait
echo "plain run at 45 s: rss_kb=$plain"

STEPS=$((minutes * 60 * 50)) "$bin/aiflame" record --force -o "$out/long.aiflame" -- python3 bench/workloads/gpt_train.py >"$out/long.out" 2>"$out/long.err" &
recorder=$!
sleep 15
pid=$(pid_of)
if [ -z "$pid" ]; then
  echo "the recorded run did not start (or ended within 15 s):"; tail -5 "$out/long.err"; echo FAIL; exit 1
fi
t0=$(date +%s)
at60=""
max=0
while kill -0 "$pid" 2>/dev/null; do
  t=$(( $(date +%s) - t0 + 15 ))
  rss=$(rss_of "$pid")
  [ -n "$rss" ] || break
  size=$(stat -c %s "$out"/long.aiflame.rec-*."$pid" 2>/dev/null | head -1); size=${size:-0}  # the run-private name while it records (#25)
  echo "t=${t}s rss_kb=$rss profile_bytes=$size"
  [ -z "$at60" ] && [ "$t" -ge 60 ] && at60=$rss
  [ "$rss" -gt "$max" ] && max=$rss
  sleep 15
done
wait "$recorder"
rc=$?
tail -3 "$out/long.out"; grep "^aiflame:" "$out/long.err" | tail -8
added_mb=$(( (max - plain) / 1024 ))
growth=$(( (max - ${at60:-$max}) / 1024 ))
echo "recorded: exit $rc, peak rss_kb=$max, added ${added_mb} MB over plain (cap $cap_mb), growth after 60 s ${growth} MB (cap $growth_mb)"
if [ "$rc" -eq 0 ] && [ "$added_mb" -le "$cap_mb" ] && [ "$growth" -le "$growth_mb" ]; then echo PASS; else echo FAIL; exit 1; fi
