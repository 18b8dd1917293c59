#!/usr/bin/env bash
# fuzz.sh SECONDS [LIBFUZZER_OPTION...]: builds the libFuzzer targets (clang,
# AddressSanitizer + UndefinedBehaviorSanitizer, in their own build folder)
# and runs each for SECONDS, seeded with the models of Debian's
# libonnx-testdata:
#   fuzz/fuzz_import.c  the importer and exporter (round trips)
#   fuzz/fuzz_lower.c   folding and lowering for htp and gpu
#   fuzz/fuzz_target.c  the target-profile JSON parser (seeds: targets/*.json)
#   fuzz/fuzz_cli.c     the command line's option parsers (seeds: fuzz/regressions/cli)
# The two small parsers run for CARVE_FUZZ_SMALL_SECONDS (default 30) each.
# Prints the number of executions of each; fails if a fuzzer found a crash,
# a leak or a broken invariant (the input that did it is kept in the
# artifacts folder and its path printed).
#
# Environment: CARVE_FUZZ_BUILD (default build-fuzz), CARVE_TESTDATA_DIR
# (default /usr/share/libonnx-testdata/data), CARVE_FUZZ_TARGETS (default
# "fuzz_import fuzz_lower fuzz_target fuzz_cli"), CARVE_FUZZ_SMALL_SECONDS.
set -euo pipefail

SECS=${1:?usage: scripts/fuzz.sh SECONDS [libFuzzer options]}
shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${CARVE_FUZZ_BUILD:-$ROOT/build-fuzz}
TESTDATA=${CARVE_TESTDATA_DIR:-/usr/share/libonnx-testdata/data}
TARGETS=${CARVE_FUZZ_TARGETS:-fuzz_import fuzz_lower fuzz_target fuzz_cli}
SMALL_SECS=${CARVE_FUZZ_SMALL_SECONDS:-30}

command -v clang >/dev/null 2>&1 || { echo "fuzz: clang is missing: run scripts/deps.sh" >&2; exit 1; }
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCARVE_FUZZ=ON -DCARVE_SANITIZE=ON -DCARVE_REAL_MODELS=OFF -DCARVE_HEAVY_TESTS=OFF \
  -DCARVE_TESTDATA_DIR="$TESTDATA" > "$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"$(nproc)" --target $TARGETS > "$BUILD/build.log" 2>&1 ||
  { tail -n 50 "$BUILD/build.log"; exit 1; }

# Seeds: every model.onnx of the test data, copied in at run time (never
# committed). Each target's working corpus grows in its own folder across
# runs.
SEEDS=$BUILD/fuzz/seeds
mkdir -p "$SEEDS"
n_seeds=0
while IFS= read -r -d '' model; do
  rel=${model#"$TESTDATA"/}
  dest=$SEEDS/${rel//\//__}
  [ -f "$dest" ] || cp "$model" "$dest"
  n_seeds=$((n_seeds + 1))
done < <(find "$TESTDATA" -name model.onnx -print0)
[ "$n_seeds" -gt 0 ] || { echo "fuzz: no seed models under $TESTDATA: run scripts/deps.sh" >&2; exit 1; }

failed=0
for target in $TARGETS; do
  # fuzz_import keeps the folders it always had
  if [ "$target" = fuzz_import ]; then FUZZ=$BUILD/fuzz; else FUZZ=$BUILD/fuzz/${target#fuzz_}; fi
  mkdir -p "$FUZZ/corpus" "$FUZZ/artifacts"
  # inputs that once broke carve (fuzz/regressions/<target>/, committed) are
  # replayed first, with the seeds; new inputs go to the first folder only
  secs=$SECS max_len=131072
  case $target in
    fuzz_target) dirs=("$FUZZ/corpus" "$ROOT/targets") secs=$SMALL_SECS max_len=16384 ;;
    fuzz_cli) dirs=("$FUZZ/corpus") secs=$SMALL_SECS max_len=512 ;;
    *) dirs=("$FUZZ/corpus" "$SEEDS") ;;
  esac
  echo "fuzz: running $target for $secs s (corpus $FUZZ/corpus)"
  regress=$ROOT/fuzz/regressions/${target#fuzz_}
  [ -d "$regress" ] && dirs+=("$regress")
  log=$FUZZ/last-run.log
  set +e
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    "$BUILD/$target" -max_total_time="$secs" -print_final_stats=1 -max_len="$max_len" -timeout=30 \
    -rss_limit_mb=4096 -artifact_prefix="$FUZZ/artifacts/" "$@" "${dirs[@]}" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -n1)
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^Done [0-9]+ runs' "$log" || true
  [ "$rc" -eq 0 ] || tail -n 60 "$log"
  echo "fuzz: $target: ${execs:-0} executions in $secs s, corpus of $(find "$FUZZ/corpus" -type f | wc -l) inputs (log: $log)"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $target FAILED (exit $rc); inputs that broke carve:" >&2
    grep -E "Test unit written to|artifact_prefix" "$log" >&2 || ls -1 "$FUZZ/artifacts" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz: no crash found"
