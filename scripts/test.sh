#!/usr/bin/env bash
# test.sh: carve's whole test suite, exactly as CI runs it (.ci/run calls
# this script). On a fresh Debian 12 machine, as root, from the source tree:
#
#   scripts/test.sh
#
# 1. scripts/deps.sh           installs what is missing (idempotent)
# 2. scripts/fetch-models.sh   the real models, into $CARVE_MODEL_CACHE
# 3. build/                    optimized build, warnings as errors, every test
#                              (heavy real models included)
# 4. build-asan/               AddressSanitizer + UndefinedBehaviorSanitizer
#                              build, every test but the heavy ones
#    build-tsan/               ThreadSanitizer: the library and tests/test_threads.c
# 5. build-fuzz/               the libFuzzer targets, each for CARVE_FUZZ_SECONDS (60)
#
# Any failure stops the script with a non-zero status. Environment:
# CARVE_MODEL_CACHE (default ~/.cache/carve-models), CARVE_JOBS (default: the
# number of cores), CARVE_FUZZ_SECONDS (default 60).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
export CARVE_MODEL_CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
JOBS=${CARVE_JOBS:-$(nproc)}
FUZZ_SECONDS=${CARVE_FUZZ_SECONDS:-60}
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/carve-test-logs-XXXXXX")
trap 'rm -rf "$LOGS"' EXIT

started=$SECONDS
step_start=$SECONDS
step() {
  echo
  echo "==== [$((SECONDS - started)) s] $*"
  step_start=$SECONDS
}
step_done() { echo "==== $1 took $((SECONDS - step_start)) s"; }

# ctest prints "100% tests passed, 0 tests failed out of 80": keep the count.
passed=0
run_ctest() {
  local dir=$1 log
  log=$LOGS/$(basename "$1").ctest.log
  (cd "$dir" && ctest -j"$JOBS" --output-on-failure) 2>&1 | tee "$log"
  local n
  n=$(sed -nE 's/^100% tests passed, 0 tests failed out of ([0-9]+)$/\1/p' "$log")
  [ -n "$n" ] || { echo "test.sh: ctest in $dir did not pass every test" >&2; exit 1; }
  passed=$((passed + n))
}

step "dependencies (scripts/deps.sh)"
scripts/deps.sh
step_done dependencies

step "real models (scripts/fetch-models.sh)"
scripts/fetch-models.sh
step_done "fetching models"

step "optimized build in build/ (-DCARVE_WERROR=ON) and its tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARVE_WERROR=ON -DCARVE_SANITIZE=OFF \
  -DCARVE_FUZZ=OFF -DCARVE_REAL_MODELS=ON -DCARVE_HEAVY_TESTS=ON -DCARVE_MODEL_CACHE="$CARVE_MODEL_CACHE"
cmake --build build -j"$JOBS"
run_ctest build
step_done "optimized build and tests"

step "sanitizer build in build-asan/ (-DCARVE_SANITIZE=ON -DCARVE_HEAVY_TESTS=OFF) and its tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARVE_WERROR=ON -DCARVE_SANITIZE=ON \
  -DCARVE_FUZZ=OFF -DCARVE_REAL_MODELS=ON -DCARVE_HEAVY_TESTS=OFF -DCARVE_MODEL_CACHE="$CARVE_MODEL_CACHE"
cmake --build build-asan -j"$JOBS"
run_ctest build-asan
step_done "sanitizer build and tests"

step "ThreadSanitizer build in build-tsan/ (-DCARVE_TSAN=ON): the library and test_threads only"
# TSan cannot share a build with ASan. Only what the thread test needs is
# built (the library and tests/test_threads.c); OpenBLAS runs one thread.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARVE_WERROR=ON -DCARVE_TSAN=ON \
  -DCARVE_FUZZ=OFF -DCARVE_REAL_MODELS=OFF -DCARVE_HEAVY_TESTS=OFF
cmake --build build-tsan -j"$JOBS" --target test_threads
(cd build-tsan && OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 ctest -R '^threads\.' --output-on-failure) 2>&1 |
  tee "$LOGS/build-tsan.ctest.log"
n=$(sed -nE 's/^100% tests passed, 0 tests failed out of ([0-9]+)$/\1/p' "$LOGS/build-tsan.ctest.log")
[ -n "$n" ] || { echo "test.sh: the ThreadSanitizer tests did not pass" >&2; exit 1; }
passed=$((passed + n))
step_done "ThreadSanitizer build and test"

step "fuzzing for $FUZZ_SECONDS s (scripts/fuzz.sh)"
scripts/fuzz.sh "$FUZZ_SECONDS"
passed=$((passed + 1))
step_done fuzzing

echo
echo "==== all done in $((SECONDS - started)) s: both ctest runs and the fuzzer passed"
echo "test.sh: $passed passed, 0 failed"
