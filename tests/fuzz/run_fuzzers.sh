#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) and runs each for a bounded time over its
# committed corpus (tests/fuzz/corpus/NAME) plus recorded fixtures, one harness at a time (the profile
# harnesses with the structure-aware mutator, profile_mutator.h). Usage: run_fuzzers.sh [SECONDS=20] [NAME...]
# The long campaign (issue #25: 10 minutes of each harness, 80 minutes in all; results in
# bench/RESULTS.md "Fuzzing"), in the background since it outlasts a terminal's patience:
#   nice bash tests/fuzz/run_fuzzers.sh 600 >build-fuzz/campaign.log 2>&1 &
# Each harness's line gives its executions and the size of its corpus at the end.
# A crash leaves its input in build-fuzz/crash-*; add it to the corpus and a regression test.
# A crash whose log matches a line of known_crashes.txt (a bug with an open issue) is reported as
# "known" and does not fail the run; remove the line when the issue's fix lands.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
shift || true
only=("$@")
out=build-fuzz
mkdir -p "$out"
CXX=${FUZZ_CXX:-clang++}
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DFMT_HEADER_ONLY=1
       -Isrc -I/usr/local/cuda/include)
# name | seeds besides tests/fuzz/corpus/NAME | -max_len | -timeout (default 60 s per input: on a loaded
# 2-core machine under ASan a folded input took over 10 s once where it replays in 0.03 s, issue #20).
harnesses=(
  "profile_reader|tests/data/demo_matmul.aiflame tests/data/multigpu.aiflame|262144"
  "report_stream|tests/data/demo_matmul.aiflame tests/data/multigpu.aiflame tests/data/demo_inline.aiflame tests/fuzz/corpus/profile_reader/crafted_*.aiflame|262144"
  "folded_reader||65536"
  "iaprof_reader|tests/data/iaprof_current.txt tests/data/iaprof_interval.txt|65536"
  # A file as report reads a text input: format detection, gzip (mutated inside), the line stream.
  "text_input|tests/data/iaprof_interval.txt|65536"
  "cubin||65536"
  "nvdisasm|tests/data/nvdisasm/demo_c_g_gi_plr_head.txt|65536"
  # Regexes are command-line arguments: a few KB. 20 s: a filter input takes microseconds (RE2 matches
  # in linear time), so a slow one is a finding.
  "filter||4096|20"
  # The native unwinder's CFI row builder (the injection library's code, not the report side's).
  "cfi_table||65536"
  # The decoders of torch's thread-local accessors (the injection library's): a function's first bytes.
  "torch_tls_code||104"
  # The readers of CPython's Py_IsInitialized and PyGILState_GetThisThreadState (the injection library's).
  "py_runtime_fields||104"
  # The Level Zero backend's decoding of EU-stall values (the injection library's).
  "eu_stall_values||65536"
  # The reader of iga64's listing (Intel GPU instruction names).
  "iga_listing||65536"
  # `record --duty` and `report --since/--until` values: a few bytes.
  "duty_spec||256|20"
)
# The report side's sources, read from src/CMakeLists.txt (aiflame_format and aiflame_core) so that the
# list never drifts from the build; compiled once with the fuzzing flags into an archive that each
# harness links, so only what a harness uses is pulled in.
mapfile -t sources < <(awk '/^add_library\(aiflame_(format|core) STATIC/{on=1; next}
                             on {l=$0; if (l ~ /\)/) {sub(/\).*/, "", l); on=0}; print l}' src/CMakeLists.txt |
                       tr -d ' ' | grep '\.cpp$' | sed 's#^#src/#')
sources+=(src/output/*_writer.cpp)  # CMake globs the writers (src/CMakeLists.txt)
cmake -DDIR=src/output/html -DOUT=$out/generated/output/html_assets.h -P src/output/html/embed.cmake || exit 1
# pprof's schema, compiled by protoc as the CMake build does (protobuf_generate).
protoc --cpp_out=$out/generated -Isrc src/output/profile.proto || exit 1
sources+=($out/generated/output/profile.pb.cc)
mkdir -p $out/obj
# An object is rebuilt when its source or any header under src/ is newer than it (a second run is quick;
# remove build-fuzz/obj after changing the flags).
newest=$(find src -name '*.h' -print0 | xargs -0 stat -c %Y | sort -n | tail -1)
export newest
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'o='$out'/obj/$(echo {} | tr / _).o; if [ -f "$o" ] && [ "$(stat -c %Y "$o")" -ge "$newest" ] && [ "$o" -nt {} ]; then exit 0; fi; '"$CXX ${flags[*]} -I$out/generated"' -c {} -o "$o"' ||
  { echo "fuzzers: the sources do not build"; exit 1; }
rm -f $out/libcore_fuzz.a
ar rcs $out/libcore_fuzz.a $(printf "$out/obj/%s.o\n" $(printf '%s\n' "${sources[@]}" | tr / _))
libs=($out/libcore_fuzz.a -ldw -lelf -lzstd -lz -lprotobuf -lre2)
wanted() { [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }
for h in "${harnesses[@]}"; do
  name=${h%%|*}
  wanted "$name" || continue
  if [ "$name" = cfi_table ]; then
    $CXX "${flags[@]}" tests/fuzz/cfi_table_fuzz.cpp src/record/unwind/cfi_table.cpp -o $out/cfi_table_fuzz &
    continue
  fi
  if [ "$name" = py_runtime_fields ]; then
    $CXX "${flags[@]}" tests/fuzz/py_runtime_fields_fuzz.cpp src/record/py_runtime_fields.cpp -o $out/py_runtime_fields_fuzz &
    continue
  fi
  if [ "$name" = duty_spec ]; then
    $CXX "${flags[@]}" tests/fuzz/duty_spec_fuzz.cpp src/record/duty_spec.cpp src/cli/time_span.cpp "${libs[@]}" -o $out/duty_spec_fuzz &
    continue
  fi
  if [ "$name" = torch_tls_code ]; then
    $CXX "${flags[@]}" tests/fuzz/torch_tls_code_fuzz.cpp src/record/autograd/torch_tls_code.cpp -o $out/torch_tls_code_fuzz &
    continue
  fi
  if [ "$name" = eu_stall_values ]; then
    $CXX "${flags[@]}" tests/fuzz/eu_stall_values_fuzz.cpp src/record/levelzero/eu_stall_values.cpp -o $out/eu_stall_values_fuzz &
    continue
  fi
  $CXX "${flags[@]}" -Itests/fuzz tests/fuzz/${name}_fuzz.cpp "${libs[@]}" -o $out/${name}_fuzz &
done
wait
passed=0 failed=0 known=0
# known_as LOG: what known_crashes.txt says of the crash in LOG, or nothing.
known_as() {
  local pattern what part all
  while IFS=$'\t' read -r pattern what; do
    { [ -z "$pattern" ] || [[ $pattern == \#* ]]; } && continue
    all=1
    while read -r part; do grep -Eq -- "$part" "$1" || all=0; done < <(echo "$pattern" | sed 's/ && /\n/g')
    if [ "$all" = 1 ]; then echo "$what"; return; fi
  done <tests/fuzz/known_crashes.txt
}
# run NAME MAX_LEN TIMEOUT SEEDS...: fuzzes for $secs in all. After a known crash the fuzzer starts again
# (its corpus kept) for the time left, so a known bug does not end the search for unknown ones.
run() {
  local name=$1 max_len=$2 timeout=$3
  shift 3
  if [ ! -x "$out/${name}_fuzz" ]; then echo "$name: FAILED (harness did not build)"; failed=$((failed + 1)); return; fi
  rm -rf "$out/corpus_$name" "$out/$name"-crash-* "$out/$name"-oom-* "$out/$name"-timeout-* "$out/$name"-leak-*
  mkdir -p "$out/corpus_$name"
  cp tests/fuzz/corpus/"$name"/* "$@" "$out/corpus_$name/" 2>/dev/null
  local start=$SECONDS left=$secs execs=0 round=0 status log artifact sig found=()
  while [ "$left" -gt 0 ] && [ "$round" -lt 10 ]; do
    round=$((round + 1))
    log=$out/$name.$round.log
    (cd $out && ASAN_OPTIONS=detect_leaks=1 ./${name}_fuzz -max_total_time="$left" -max_len="$max_len" -timeout="$timeout" \
       -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$name-" "corpus_$name" \
       >"$name.$round.log" 2>&1)
    status=$?
    execs=$((execs + $(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 | grep -Eo '^[0-9]+' || echo 0)))
    [ "$status" -eq 0 ] && break
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    sig=$(known_as "$log")
    if [ -z "$sig" ]; then
      echo "$name: FAILED (input: $out/${artifact#./}; log: $log)"
      tail -60 "$log"
      failed=$((failed + 1))
      return
    fi
    found+=("$sig (input: $out/${artifact#./}; $(grep -m1 -Eo 'ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer): [^(]*|runtime error: .*|terminate called .*' "$log"))")
    left=$((secs - (SECONDS - start)))
  done
  passed=$((passed + 1))
  local corpus
  corpus=$(find "$out/corpus_$name" -type f | wc -l)
  if [ ${#found[@]} -eq 0 ]; then
    echo "$name: passed ($execs inputs in $((SECONDS - start)) s; corpus $corpus files)"
  else
    known=$((known + ${#found[@]}))
    echo "$name: passed but for known crashes ($execs inputs in $((SECONDS - start)) s; corpus $corpus files):"
    printf '  KNOWN %s\n' "${found[@]}"
  fi
}
for h in "${harnesses[@]}"; do
  IFS='|' read -r name seeds max_len timeout <<<"$h"
  wanted "$name" || continue
  # shellcheck disable=SC2086
  run "$name" "$max_len" "${timeout:-60}" $seeds
done
echo "fuzzers: $passed passed, $failed failed$([ "$known" -gt 0 ] && echo " ($known known crashes, see known_crashes.txt)")"
[ "$failed" -eq 0 ]
