#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) and runs each for a bounded time over its
# committed corpus (tests/fuzz/corpus/NAME) plus the recorded fixtures. Usage: run_fuzzers.sh [SECONDS=20]
# A crash leaves its input in build-fuzz/; add it to the corpus and a regression test.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
out=build-fuzz
mkdir -p "$out"
CXX=${FUZZ_CXX:-clang++}
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DFMT_HEADER_ONLY=1
       -Isrc -I/usr/local/cuda/include)
common=(src/profile/profile_reader.cpp src/profile/record_codec.cpp src/profile/profile_writer.cpp
        src/attribute/attribution.cpp src/attribute/launch_index.cpp src/attribute/frame_builder.cpp src/attribute/process_row.cpp src/output/flame_stack.cpp
        src/symbolize/symbolizer.cpp src/symbolize/demangle.cpp src/symbolize/cubin_lines.cpp
        src/symbolize/nvdisasm.cpp src/symbolize/gpu_symbolizer.cpp src/output/folded_writer.cpp src/output/svg_writer.cpp)
input=(src/input/folded_reader.cpp src/input/iaprof_reader.cpp)
libs=(-ldw -lelf -lzstd -lz)
$CXX "${flags[@]}" tests/fuzz/profile_reader_fuzz.cpp "${common[@]}" "${libs[@]}" -o $out/profile_reader_fuzz &
$CXX "${flags[@]}" tests/fuzz/folded_reader_fuzz.cpp "${common[@]}" "${input[@]}" "${libs[@]}" -o $out/folded_reader_fuzz &
$CXX "${flags[@]}" tests/fuzz/iaprof_reader_fuzz.cpp "${common[@]}" "${input[@]}" "${libs[@]}" -o $out/iaprof_reader_fuzz &
wait
run() {  # run NAME SEEDS...
  local name=$1
  shift
  mkdir -p "$out/corpus_$name"
  cp tests/fuzz/corpus/"$name"/* "$@" "$out/corpus_$name/" 2>/dev/null || true
  (cd $out && ASAN_OPTIONS=detect_leaks=1 ./${name}_reader_fuzz -max_total_time="$secs" -max_len=65536 -timeout=10 \
     -rss_limit_mb=2048 -print_final_stats=1 "corpus_$name" 2>"$name.log") || { tail -40 "$out/$name.log"; return 1; }
  grep -E "stat::number_of_executed_units" "$out/$name.log" | sed "s/^/$name: /"
}
fail=0
run profile tests/data/demo_matmul.aiflame || fail=$((fail + 1))
run folded || fail=$((fail + 1))
run iaprof tests/data/iaprof_current.txt tests/data/iaprof_interval.txt || fail=$((fail + 1))
echo "fuzzers: $((3 - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
