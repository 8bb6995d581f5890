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
# The report side's sources, read from src/CMakeLists.txt (aiflame_format and aiflame_core) so that the
# list never drifts from the build; compiled once with the fuzzing flags into an archive that each
# harness links, so only what a harness uses is pulled in.
mapfile -t sources < <(awk '/^add_library\(aiflame_(format|core) STATIC/{on=1; next} on && /\)/{on=0} on' src/CMakeLists.txt |
                       tr -d ' ' | grep '\.cpp$' | sed 's#^#src/#')
cmake -DDIR=src/output/html -DOUT=$out/generated/output/html_assets.h -P src/output/html/embed.cmake
# pprof's schema, compiled by protoc as the CMake build does (protobuf_generate).
protoc --cpp_out=$out/generated -Isrc src/output/profile.proto
sources+=($out/generated/output/profile.pb.cc)
mkdir -p $out/obj
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'o='$out'/obj/$(echo {} | tr / _).o; '"$CXX ${flags[*]} -I$out/generated"' -c {} -o "$o"'
rm -f $out/libcore_fuzz.a
ar rcs $out/libcore_fuzz.a $out/obj/*.o
libs=($out/libcore_fuzz.a -ldw -lelf -lzstd -lz -lprotobuf)
for name in profile folded iaprof; do
  $CXX "${flags[@]}" tests/fuzz/${name}_reader_fuzz.cpp "${libs[@]}" -o $out/${name}_reader_fuzz &
done
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
