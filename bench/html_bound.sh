#!/usr/bin/env bash
# The HTML report of a long profile: page size, peak memory and time, for one or more aiflame
# binaries side by side (issue #25). Usage: bench/html_bound.sh BUILD_DIR [SECONDS=300] [AIFLAME...]
# BUILD_DIR holds aiflame_synth_profile; each AIFLAME (default BUILD_DIR/aiflame) reports the same
# synthetic profile to .html, .heatmap.svg (the timed pipeline alone) and .svg (no time series).
set -euo pipefail
build=$1
secs=${2:-300}
shift $(( $# >= 2 ? 2 : 1 ))
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=("$build/aiflame")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$build/aiflame_synth_profile" "$T/p.aiflame" "$secs"
for bin in "${bins[@]}"; do
  for out in html heatmap.svg svg; do
    /usr/bin/time -v "$bin" report -q "$T/p.aiflame" -o "$T/out.$out" 2>"$T/time" || echo "$bin $out: exit $?"
    printf '%s  %-12s %10s bytes  peak RSS %8s KB  %s\n' "$bin" "$out" "$(stat -c %s "$T/out.$out" 2>/dev/null || echo -)" \
      "$(awk -F': ' '/Maximum resident/ {print $2}' "$T/time")" "$(awk -F': ' '/Elapsed/ {print $2}' "$T/time")"
    rm -f "$T/out.$out"
  done
done
