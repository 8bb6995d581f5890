#!/usr/bin/env bash
# Builds everything and runs every test, as CI does (`.ci/run` calls exactly this):
#   deps     what the tests need beyond the README's build command: clang and libclang-rt-14-dev (the
#            fuzzers), chromium, Node >= 20 and tests/interop's npm packages (the real-client checks),
#            golang-go, protobuf, libunwind and python3-torch (the torch_api test); installed with apt-get as root (or sudo -n), named otherwise
#   build    the release build            ctest    its tests (ctest)
#   asan     the ASan + UBSan build       ctest-asan   the tests again under the sanitizers
#   tsan     the ThreadSanitizer build    tsan-record  the recorder's tests (tests/record) under it
#   fuzz     the libFuzzer harnesses, a bounded run each (tests/fuzz/run_fuzzers.sh)
# Every stage runs even when an earlier one failed; the run ends with one line per stage and
# "N passed, N failed", counting stages, and exits 1 when any stage failed. A check that was skipped
# (a tool missing outside CI) is named in its stage's line; with CI set, a skip is a failure.
# Knobs: AIFLAME_SKIP_SANITIZERS=1, AIFLAME_SKIP_FUZZ=1 (stages skipped by name; not allowed in CI),
# AIFLAME_FUZZ_SECONDS (default 20), AIFLAME_NO_INSTALL=1 (check and name, never install).
# Build logs go to build*/run_all_*.log; a failing stage prints its tail.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
jobs=$(nproc)
ci=${CI:+1}
export DEBIAN_FRONTEND=noninteractive

names=() results=()  # one per stage: "passed", "failed (...)", "skipped (...)"
skipped_checks=()    # checks that did not run, by name
stage() {  # stage NAME RESULT
  names+=("$1")
  results+=("$2")
  echo "== $1: $2"
}
skip_stage() {  # skip_stage NAME WHY
  skipped_checks+=("$1: $2")
  if [ -n "$ci" ]; then stage "$1" "failed (skipped in CI: $2)"; else stage "$1" "skipped ($2)"; fi
}
log_tail() { [ -f "$1" ] && tail -40 "$1"; }

# ---- deps ---------------------------------------------------------------------------------------
# Debian packages of the README's build command, and those only the tests need.
pkgs=(cmake g++ make pkg-config libdw-dev libelf-dev libzstd-dev zlib1g-dev liblzma-dev libbz2-dev
      libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libbenchmark-dev libre2-dev python3
      clang libclang-rt-14-dev chromium golang-go protobuf-compiler libprotobuf-dev libunwind-dev
      tmux  # aiflame top in a real terminal (tests/cli/top_test.sh)
      python3-torch  # the torch_api test: resolve_torch() inside a Python that imported a real torch
      libze-dev libze1 libigc-tools)  # the Level Zero backend's headers, loader and tracing layer, iga64
node_dir=$ROOT/.tools/node  # Node >= 20 from the npm registry's `node` package when the system's is older
node_ok() { command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 20 ]; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif sudo -n true 2>/dev/null; then sudo -n "$@"; else return 1; fi
}
deps() {
  local missing=() p problems=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  # Debian 12's nodejs is 18 (playwright-core 1.65 needs 20): its npm only installs the `node` package.
  [ -x "$node_dir/node_modules/.bin/node" ] && export PATH="$node_dir/node_modules/.bin:$PATH"
  if ! node_ok && ! command -v npm >/dev/null; then missing+=(npm); fi
  if [ ${#missing[@]} -gt 0 ] && [ "${AIFLAME_NO_INSTALL:-0}" != 1 ]; then
    echo "installing: ${missing[*]}"
    if as_root apt-get update -qq && as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
      missing=()
    fi
  fi
  for p in "${missing[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || problems+=("$p (apt-get install -y $p)"); done
  if ! node_ok && command -v npm >/dev/null && [ "${AIFLAME_NO_INSTALL:-0}" != 1 ]; then
    echo "installing Node 20 into $node_dir (npm install node@20)"
    npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error node@20 >/dev/null &&
      export PATH="$node_dir/node_modules/.bin:$PATH"
  fi
  node_ok || problems+=("Node >= 20 (found: $(node --version 2>/dev/null || echo none))")
  if node_ok && command -v npm >/dev/null; then
    # npm ci again only when the lock file changed since the last one.
    if ! cmp -s tests/interop/package-lock.json tests/interop/node_modules/.package-lock.json.ci 2>/dev/null; then
      if (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
        cp tests/interop/package-lock.json tests/interop/node_modules/.package-lock.json.ci
      else
        problems+=("tests/interop npm packages ((cd tests/interop && npm ci) failed)")
      fi
    fi
  else
    problems+=("tests/interop npm packages (needs npm and Node >= 20)")
  fi
  test -f /usr/local/cuda/include/cupti.h || problems+=("CUDA 13 headers under /usr/local/cuda (the CUDA toolkit)")
  if [ ${#problems[@]} -eq 0 ]; then
    stage deps passed
  else
    printf '  missing: %s\n' "${problems[@]}"
    # Outside CI the checks that need them are skipped, and named below.
    skip_stage deps "missing: $(IFS=';'; echo "${problems[*]}")"
  fi
}
deps

# ---- ctest with skips named ----------------------------------------------------------------------
# ctest_stage NAME DIR [ctest args]: ctest's exit 77 is a skip; it is named (and fails the stage in CI).
ctest_stage() {
  local name=$1 dir=$2
  shift 2
  local log=$dir/run_all_ctest.log
  if [ ! -d "$dir" ]; then stage "$name" "failed (no build in $dir)"; return; fi
  # --timeout: a test that hangs fails in 10 minutes rather than running the whole CI out of time
  # (tests with a TIMEOUT of their own keep it).
  (cd "$dir" && ctest --output-on-failure --no-tests=error --timeout 600 -j"$jobs" "$@") 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local skips
  skips=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$log" | tr '\n' ' ' | sed 's/ $//')
  local summary
  summary=$(grep -E 'tests passed' "$log" | tail -1 | sed 's/^[0-9]*% tests passed, //')
  if [ -n "$skips" ]; then skipped_checks+=("$name: $skips"); fi
  if [ "$status" -ne 0 ]; then
    stage "$name" "failed ($summary; $(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Failed\|Timeout\|Not Run\|SEGFAULT\|Subprocess aborted\|Child aborted\|Exception\))$/\1/p' "$log" | tr '\n' ' ' | sed 's/ $//'))"
  elif [ -n "$skips" ] && [ -n "$ci" ]; then
    stage "$name" "failed (skipped in CI: $skips)"
  elif [ -n "$skips" ]; then
    stage "$name" "passed with skips (skipped: $skips)"
  else
    stage "$name" "passed (${summary:-no summary})"
  fi
}


# build_stage NAME DIR [configure args] [-- build args]: configures and builds DIR, and names the
# stage; the logs go to DIR/run_all_configure.log and DIR/run_all_build.log.
build_stage() {
  local name=$1 dir=$2 configure=() build=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do configure+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  build=("$@")
  if cmake -S . -B "$dir" "${configure[@]}" >"$dir.configure.log" 2>&1 && mv "$dir.configure.log" "$dir/run_all_configure.log" &&
     cmake --build "$dir" -j"$jobs" "${build[@]}" >"$dir/run_all_build.log" 2>&1; then
    stage "$name" passed
  else
    log_tail "$dir.configure.log"; log_tail "$dir/run_all_build.log"
    stage "$name" "failed (see $dir/run_all_build.log)"
  fi
}

# ---- build, ctest -----------------------------------------------------------------------------------
build_stage build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest_stage ctest build

# ---- asan, ctest-asan -------------------------------------------------------------------------------
if [ "${AIFLAME_SKIP_SANITIZERS:-0}" = 1 ]; then
  skip_stage asan "AIFLAME_SKIP_SANITIZERS=1"
  skip_stage ctest-asan "AIFLAME_SKIP_SANITIZERS=1"
else
  # Benchmarks (and their smoke tests) run in the release build only.
  build_stage asan build-asan -DCMAKE_BUILD_TYPE=Debug -DAIFLAME_SANITIZE=ON -DAIFLAME_BENCHMARKS=OFF \
    -- --target aiflame_tests aiflame aiflame_cupti
  # The python_frames and torch_api probes are loaded into an uninstrumented interpreter; they run in the release build only.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest_stage ctest-asan build-asan -E 'python_frames|torch_api'
fi

# ---- tsan, tsan-record ------------------------------------------------------------------------------
# The recorder's tests again under ThreadSanitizer: the launch path takes no lock in the steady state
# and shares its tables with the collector, and two races there were found only by a TSan build run
# by hand (38371b1, bfe3628). Only tests/record's suites: the rest of the program has one thread.
if [ "${AIFLAME_SKIP_SANITIZERS:-0}" = 1 ]; then
  skip_stage tsan "AIFLAME_SKIP_SANITIZERS=1"
  skip_stage tsan-record "AIFLAME_SKIP_SANITIZERS=1"
else
  build_stage tsan build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAIFLAME_TSAN=ON -DAIFLAME_BENCHMARKS=OFF -- --target aiflame_tests
  # Every suite defined under tests/record. Unwinder.AtAsynchronousSignalsEqualsLibunwind is left out:
  # TSan delivers a signal only when the thread reaches instrumented code, and the test's target spins
  # in an uninstrumented library, so it never returns. Unwinder.AtEveryInstruction* too: they single-step
  # one thread through TSan's own runtime (a trap per instruction), and have no second thread for TSan
  # to check. A TSan report makes the binary exit 66.
  record_suites=$(grep -ho '^TEST\(_F\|_P\)\?([A-Za-z0-9_]*' tests/record/*.cpp tests/record/measure/*.cpp tests/record/unwind/*.cpp |
                  sed 's/.*(//' | sort -u | sed 's/$/.*/' | paste -sd:)
  # Each binary within 15 minutes (they take ~20 s): a hang fails the stage and names its test, where
  # it once ran the whole CI out of time (stop 46: a forked child waiting for a lock; util/fork_guard.h).
  tlog=build-tsan/run_all_tsan_record.log
  tsan_status=0
  if [ -x build-tsan/tests/aiflame_tests ] && [ -x build-tsan/tests/aiflame_unwind_tests ]; then
    topts="second_deadlock_stack=1 suppressions=$PWD/tests/tsan_suppressions.txt"  # the file says why
    TSAN_OPTIONS=$topts timeout -k 10 900 build-tsan/tests/aiflame_tests --gtest_filter="$record_suites" >"$tlog" 2>&1 &&
    TSAN_OPTIONS=$topts timeout -k 10 900 build-tsan/tests/aiflame_unwind_tests \
      --gtest_filter='-Unwinder.AtAsynchronousSignalsEqualsLibunwind:Unwinder.AtEveryInstruction*' >>"$tlog" 2>&1 || tsan_status=$?
  else
    tsan_status=1
  fi
  if [ "$tsan_status" -eq 0 ]; then
    stage tsan-record "passed ($(grep -c '^\[       OK \]' "$tlog") tests)"
  elif [ "$tsan_status" -eq 124 ] || [ "$tsan_status" -eq 137 ]; then
    log_tail "$tlog"
    stage tsan-record "failed (timed out after 900 s in $(grep '^\[ RUN      \]' "$tlog" | tail -1 | sed 's/^\[ RUN      \] //'))"
  else
    log_tail "$tlog"
    stage tsan-record "failed ($(grep -c "^WARNING: ThreadSanitizer" "$tlog" 2>/dev/null || true) TSan reports; see $tlog)"
  fi
fi

# ---- fuzz -------------------------------------------------------------------------------------------
if [ "${AIFLAME_SKIP_FUZZ:-0}" = 1 ]; then
  skip_stage fuzz "AIFLAME_SKIP_FUZZ=1"
elif ! command -v clang++ >/dev/null || ! dpkg -s libclang-rt-14-dev >/dev/null 2>&1; then
  skip_stage fuzz "needs clang and libclang-rt-14-dev"
else
  mkdir -p build-fuzz
  if bash tests/fuzz/run_fuzzers.sh "${AIFLAME_FUZZ_SECONDS:-20}" 2>&1 | tee build-fuzz/run_all_fuzz.log; then
    stage fuzz "passed ($(grep -E '^fuzzers:' build-fuzz/run_all_fuzz.log | tail -1 | sed 's/^fuzzers: //'))"
  else
    stage fuzz "failed ($(grep -E '^fuzzers:' build-fuzz/run_all_fuzz.log | tail -1 | sed 's/^fuzzers: //'))"
  fi
fi

# ---- summary ----------------------------------------------------------------------------------------
echo
echo "== summary (stages)"
passed=0 failed=0
for i in "${!names[@]}"; do
  printf '%-11s %s\n' "${names[$i]}" "${results[$i]}"
  case ${results[$i]} in
    passed*) passed=$((passed + 1)) ;;
    skipped*) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
for s in "${skipped_checks[@]}"; do echo "SKIPPED $s"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
