#!/usr/bin/env bash
# bench_models.sh: carve's reference runtime against onnxruntime (one thread)
# on OCR det (1x3x640x640), OCR rec (1x3x48x320) and silero VAD (one 512-
# sample frame at 16 kHz: a short run repeated often, where per-run overhead
# shows; it runs 200 x RUNS times), same inputs, same run: time per run and
# peak memory of each, and their ratio; each after one untimed warm-up run
# (`carve run --warmup 1`, tests/ort/bench.js likewise). carve runs one thread too
# (`carve run --threads 1`, the default; OPENBLAS_NUM_THREADS does not change
# carve's count, docs/performance.md). The machine's load average is printed
# first: on a shared machine the times move with it.
#   bench/bench_models.sh [BUILD_DIR] [RUNS]
set -euo pipefail
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
. "$ROOT/bench/args.sh"
bench_args bench_models.sh
CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
P=p2o.DynamicDimension
# run NAME MODEL RUNS CARVE_RUN_ARGS...: the inputs carve makes (or is
# given) are saved, then both runtimes run on them
run() {
  local name=$1 model=$2 runs=$3
  shift 3
  local dir
  dir=$(mktemp -d)
  "$BUILD/carve" run "$model" --random-inputs 1 "$@" --output-dir "$dir" >/dev/null
  local args=() f
  for f in "$dir"/inputs/*.npy; do
    args+=(--input "$(basename "$f" .npy)=$f")
  done
  local c o
  c=$("$BUILD/carve" run "$model" "${args[@]}" --threads 1 --warmup 1 --repeat "$runs" | grep '^time per run')
  o=$(node "$ROOT/tests/ort/bench.js" "$model" "$dir" "$runs" | grep '^time per run')
  local cm om
  cm=$(sed -E 's/^time per run: ([0-9.]+) ms mean.*/\1/' <<<"$c")
  om=$(sed -E 's/^time per run: ([0-9.]+) ms mean.*/\1/' <<<"$o")
  printf '%s\n  carve:       %s\n  onnxruntime: %s\n  ratio carve/onnxruntime: %s\n' "$name" "$c" "$o" \
    "$(awk -v a="$cm" -v b="$om" 'BEGIN { printf "%.2f", a / b }')"
  rm -rf "$dir"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown); OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS"
run "OCR det 1x3x640x640" "$CACHE/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx" "$RUNS" \
  --dim $P.0=1 --dim $P.1=640 --dim $P.2=640
run "OCR rec 1x3x48x320" "$CACHE/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx" "$RUNS" \
  --dim $P.0=1 --dim $P.1=320
DATA=$ROOT/tests/data
run "silero VAD 512 samples" "$CACHE/silero-vad-1.0.3/package/weights/silero_vad.onnx" "$((RUNS * 200))" \
  --input "sr=$DATA/sr16000.npy" --input "input=$DATA/audio_1x512.npy" --input "state=$DATA/state_2x1x128.npy"
