#!/usr/bin/env bash
# Builds everything and runs every test: the release build, then the tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer, then the fuzzers for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")
if [ "${AIFLAME_SKIP_SANITIZERS:-0}" != 1 ]; then
  # Benchmarks (and their smoke tests) run in the release build only.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DAIFLAME_SANITIZE=ON -DAIFLAME_BENCHMARKS=OFF >/dev/null
  cmake --build build-asan -j"$jobs" --target aiflame_tests aiflame aiflame_cupti
  # The python_frames and torch_api probes are loaded into an uninstrumented interpreter; they run in the release build only.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$jobs" -E 'python_frames|torch_api')
fi
# Fuzzers (libFuzzer with ASan and UBSan), a bounded run each over the committed corpus.
if [ "${AIFLAME_SKIP_FUZZ:-0}" != 1 ]; then
  bash tests/fuzz/run_fuzzers.sh "${AIFLAME_FUZZ_SECONDS:-20}"
fi
