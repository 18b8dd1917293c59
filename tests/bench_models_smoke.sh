#!/usr/bin/env bash
# bench_models_smoke.sh BUILD_DIR: bench/bench_models.sh runs (one run of
# each runtime; silero 200) and prints, for each of its three models, carve's
# and onnxruntime's time per run and peak memory, and a ratio that is
# carve's mean over onnxruntime's, to the printed rounding. A bad RUNS and a
# folder without carve are exit 2 with a message and nothing printed. The
# figures are not judged. It needs the real models
# (scripts/fetch-models.sh) and onnxruntime-node (tests/ort).
set -uo pipefail
BUILD=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
CARVE=$HERE/../bench/bench_models.sh RUN_NAME=bench/bench_models.sh
cli_init bench-models

refused "RUNS takes 1 to 99, not '100'" "$BUILD" 100
refused "RUNS takes 1 to 99, not 'x'" "$BUILD" x
refused "no carve binary in '$T'" "$T" 1

run "$BUILD" 1
expect_rc 0
cat "$T/out"
# time per run: M ms mean, B ms best over N runs; peak memory P MiB
re='time per run: ([0-9.]+) ms mean, [0-9.]+ ms best over ([0-9]+) runs; peak memory [0-9.]+ MiB'
for name in "OCR det 1x3x640x640" "OCR rec 1x3x48x320" "silero VAD 512 samples"; do
  block=$(grep -A3 "^$name\$" "$T/out") || { fail_only "no block for $name"; continue; }
  c=$(sed -nE "s/^  carve: +$re.*/\1 \2/p" <<<"$block")
  o=$(sed -nE "s/^  onnxruntime: +$re.*/\1 \2/p" <<<"$block")
  r=$(sed -nE 's/^  ratio carve\/onnxruntime: ([0-9.]+)$/\1/p' <<<"$block")
  if [ -z "$c" ] || [ -z "$o" ] || [ -z "$r" ]; then
    fail_only "$name: a line is missing or malformed: $block"
    continue
  fi
  read -r cm cn <<<"$c"
  read -r om on <<<"$o"
  want=1
  [ "$name" = "silero VAD 512 samples" ] && want=200
  [ "$cn" = $want ] && [ "$on" = $want ] || fail_only "$name: $cn and $on runs, not $want"
  awk -v c="$cm" -v o="$om" -v r="$r" 'BEGIN { d = r - c / o; exit !(c > 0 && o > 0 && d <= 0.01 && d >= -0.01) }' ||
    fail_only "$name: ratio $r is not $cm/$om"
done
finish "ok: the refusals, and three models' lines and ratios"
