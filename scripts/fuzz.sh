#!/usr/bin/env bash
# fuzz.sh SECONDS [LIBFUZZER_OPTION...]: builds the libFuzzer target
# fuzz/fuzz_import.c (clang, AddressSanitizer + UndefinedBehaviorSanitizer, in
# its own build folder) and runs it for SECONDS, seeded with the models of
# Debian's libonnx-testdata. Prints the number of executions; fails if the
# fuzzer found a crash, a leak or a round-trip mismatch (the input that did it
# is kept in the artifacts folder and its path printed).
#
# Environment: CARVE_FUZZ_BUILD (default build-fuzz), CARVE_TESTDATA_DIR
# (default /usr/share/libonnx-testdata/data).
set -euo pipefail

SECS=${1:?usage: scripts/fuzz.sh SECONDS [libFuzzer options]}
shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${CARVE_FUZZ_BUILD:-$ROOT/build-fuzz}
TESTDATA=${CARVE_TESTDATA_DIR:-/usr/share/libonnx-testdata/data}

command -v clang >/dev/null 2>&1 || { echo "fuzz: clang is missing: run scripts/deps.sh" >&2; exit 1; }
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCARVE_FUZZ=ON -DCARVE_SANITIZE=ON -DCARVE_REAL_MODELS=OFF -DCARVE_HEAVY_TESTS=OFF \
  -DCARVE_TESTDATA_DIR="$TESTDATA" > "$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target fuzz_import > "$BUILD/build.log" 2>&1 ||
  { tail -n 50 "$BUILD/build.log"; exit 1; }

# Seeds: every model.onnx of the test data, copied in at run time (never
# committed). The working corpus grows in its own folder across runs.
FUZZ=$BUILD/fuzz
mkdir -p "$FUZZ/seeds" "$FUZZ/corpus" "$FUZZ/artifacts"
n_seeds=0
while IFS= read -r -d '' model; do
  rel=${model#"$TESTDATA"/}
  dest=$FUZZ/seeds/${rel//\//__}
  [ -f "$dest" ] || cp "$model" "$dest"
  n_seeds=$((n_seeds + 1))
done < <(find "$TESTDATA" -name model.onnx -print0)
[ "$n_seeds" -gt 0 ] || { echo "fuzz: no seed models under $TESTDATA: run scripts/deps.sh" >&2; exit 1; }

echo "fuzz: running fuzz_import for $SECS s ($n_seeds seed models, corpus $FUZZ/corpus)"
log=$FUZZ/last-run.log
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  "$BUILD/fuzz_import" -max_total_time="$SECS" -print_final_stats=1 -max_len=131072 -timeout=30 \
  -rss_limit_mb=4096 -artifact_prefix="$FUZZ/artifacts/" "$@" "$FUZZ/corpus" "$FUZZ/seeds" > "$log" 2>&1
rc=$?
set -e
execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -n1)
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^Done [0-9]+ runs' "$log" || true
[ "$rc" -eq 0 ] || tail -n 60 "$log"
echo "fuzz: ${execs:-0} executions in $SECS s, corpus of $(find "$FUZZ/corpus" -type f | wc -l) inputs (log: $log)"
if [ "$rc" -ne 0 ]; then
  echo "fuzz: FAILED (exit $rc); inputs that broke carve:" >&2
  grep -E "Test unit written to|artifact_prefix" "$log" >&2 || ls -1 "$FUZZ/artifacts" >&2
  exit 1
fi
echo "fuzz: no crash found"
