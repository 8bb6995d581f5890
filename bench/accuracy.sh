#!/usr/bin/env bash
# Attribution accuracy on the GPU machine: bench_kernels' split modes launch kernel `work` from
# path_a(), path_b() (and path_c()) with a split of the work known by construction, which each run
# prints ("truth path_a 0.75 path_b 0.25"); the attributed split of `work`'s samples must be within
# MAX_ERR percentage points (default 2, issue #65) of it for every path.
# Usage: bench/accuracy.sh [ROUNDS=1000] [MODE...]
#   modes: sequential streams size thin (3:1, issue #24), fullfull fullthin thinfull small blocksize
#   regs three graph (issue #65; see bench_kernels.cu). (thin: path_heavy/path_light in path_a/path_b.)
# Env:   AIFLAME_BIN (default .dist), BENCH_KERNELS (default $AIFLAME_BIN/aiflame_bench_kernels), OUT
#        (default /tmp), RECORD_OPTS, TIMEOUT (seconds a recording may take, default 600)
set -u
rounds=${1:-1000}
shift || true
modes=${*:-sequential streams size thin fullfull fullthin thinfull small blocksize regs three graph}
bin=${AIFLAME_BIN:-.dist}
kernels=${BENCH_KERNELS:-$bin/aiflame_bench_kernels}
out=${OUT:-/tmp}
fail=0
mkdir -p "$out"
printf '| mode | samples of work | path_a | path_b | path_c | unattributed | truth | error (pp) |\n|---|---|---|---|---|---|---|---|\n'
for m in $modes; do
  r=$rounds
  [ "$m" = thin ] && r=$((rounds / 3 + 1))  # a thin round lasts about 1.5 ms, three times a sequential one
  # shellcheck disable=SC2086
  timeout -k 5 "${TIMEOUT:-600}" "$bin/aiflame" record --force -q ${RECORD_OPTS:-} -o "$out/split_$m.aiflame" -- "$kernels" split "$m" "$r" >"$out/split_$m.log" 2>&1
  "$bin/aiflame" report --plain -q "$out/split_$m.aiflame" -o "$out/split_$m.folded" --force 2>/dev/null ||
    "$bin/aiflame" report --plain -q "$out/split_$m.aiflame" -o "$out/split_$m.folded"
  "$bin/aiflame" report "$out/split_$m.aiflame" -o "$out/split_$m.svg" --force 2>"$out/split_$m.summary" >/dev/null
  grep -h "tied to their launch exactly" "$out/split_$m.summary" | sed "s/^/$m: /" >&2
  truth=$(grep -o 'truth .*' "$out/split_$m.log" | head -1)
  [ "$m" = thin ] && truth=$(echo "$truth" | sed 's/path_heavy/path_a/; s/path_light/path_b/')
  pa=path_a pb=path_b
  [ "$m" = thin ] && pa=path_heavy pb=path_light
  awk -v m="$m" -v pa="$pa" -v pb="$pb" -v truth="$truth" '
    BEGIN { n = split(truth, t, " "); for (i = 2; i < n; i += 2) want[t[i]] = t[i + 1] }
    /;-;work(_regs)?;/ {
      c = $NF; total += c
      if ($0 ~ (";" pa "[;(]")) a += c; else if ($0 ~ (";" pb "[;(]")) b += c; else if ($0 ~ /;path_c[;(]/) cc += c; else u += c
    }
    END {
      if (total == 0 || !("path_a" in want)) { printf "| %s | %d | - | - | - | - | %s | no samples or no truth |\n", m, total, truth; exit 2 }
      got["path_a"] = a / total; got["path_b"] = b / total; got["path_c"] = cc / total
      err = 0
      for (p in want) { e = (got[p] - want[p]) * 100; if (e < 0) e = -e; if (e > err) err = e }
      printf "| %s | %d | %.2f%% | %.2f%% | %s | %.2f%% | %s | %.2f |\n", m, total, 100 * got["path_a"], 100 * got["path_b"],
             ("path_c" in want) ? sprintf("%.2f%%", 100 * got["path_c"]) : "-", 100 * u / total, truth, err
      exit (err > (ENVIRON["MAX_ERR"] ? ENVIRON["MAX_ERR"] : 2.0)) ? 1 : 0
    }' "$out/split_$m.folded" || fail=1
done
exit $fail
