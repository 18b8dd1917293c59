#!/usr/bin/env bash
# lower_vs_ort.sh: the whole `carve lower` command (process start to exit:
# load, every stage, writing the model through its temporary file and the
# report) next to onnxruntime's session creation (basic graph optimizations,
# one thread; measured inside one node process, without node's own start:
# stricter for carve) on the real models, symbolic dims fixed alike, and
# their ratio. Each figure is the median of RUNS runs after one warm-up;
# the two run in turn (carve, then a node process timing one session after
# its own warm-up, RUNS times), so both see the same spells of a busy
# machine.
# The floor column: bench/io_floor (built with carve) writing the model's
# own bytes through a synced temporary, what no lowering can go below.
#   bench/lower_vs_ort.sh [BUILD_DIR] [RUNS] [TARGET]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
TARGET=${3:-htp}
CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
OCR=$CACHE/ocr-models-1.4.2/package/assets
P=p2o.DynamicDimension
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# bench NAME MODEL [NAME=VALUE ...]: the dims are fixed for both
bench() {
  local name=$1 model=$2
  shift 2
  if [ ! -f "$model" ]; then
    printf '%-22s missing %s (scripts/fetch-models.sh)\n' "$name" "$model"
    return
  fi
  local dimargs=() d
  for d in "$@"; do dimargs+=(--dim "$d"); done
  local cmd=("$BUILD/carve" lower "$model" --target "$TARGET" -o "$TMP/out.onnx" --report "$TMP/report.json"
             "${dimargs[@]}")
  "${cmd[@]}" 2>/dev/null # warm-up: the file in the page cache
  local i t0 t1 o times=() otimes=()
  for ((i = 0; i < RUNS; i++)); do
    t0=$EPOCHREALTIME
    "${cmd[@]}" 2>/dev/null
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
    o=$(node "$ROOT/tests/ort/session.js" "$model" 1 "$@")
    o=${o#median }
    otimes+=("${o%% ms*}")
  done
  local c om f=-
  c=$(printf '%s\n' "${times[@]}" | median)
  om=$(printf '%s\n' "${otimes[@]}" | median)
  # the I/O floor: the model's bytes written copy-free through a synced temporary
  if [ -x "$BUILD/bench/io_floor" ]; then
    f=$("$BUILD/bench/io_floor" "$model" "$TMP/floor.onnx" "$RUNS" | awk '/^copy-free/ { print $3 }')
  fi
  printf '%-22s %10.1f %12.1f %7.2f %8s   carve runs: %s; onnxruntime runs: %s\n' "$name" "$c" "$om" \
    "$(awk -v a="$c" -v b="$om" 'BEGIN { print a / b }')" "$f" "${times[*]}" "${otimes[*]}"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); carve lower --target $TARGET (whole process) vs onnxruntime"
echo "session creation (basic, 1 thread); medians of $RUNS runs in ms"
echo "floor: bench/io_floor's copy-free median, the model's bytes mapped, written to a temporary, fsynced, renamed"
printf '%-22s %10s %12s %7s %8s\n' model carve onnxruntime ratio floor
bench "OCR det 1x3x640x640" "$OCR/ch_PP-OCRv4_det_infer.onnx" $P.0=1 $P.1=640 $P.2=640
bench "OCR rec 1x3x48x320" "$OCR/ch_PP-OCRv4_rec_infer.onnx" $P.0=1 $P.1=320
bench "OCR cls 1x3x48x192" "$OCR/ch_ppocr_mobile_v2.0_cls_infer.onnx" $P.0=1 $P.1=48 $P.2=192
bench "silero VAD v5" "$CACHE/silero-vad-1.0.3/package/weights/silero_vad.onnx"
bench "imgly small" "$CACHE/background-removal-1.4.5/models/small.onnx"
bench "imgly medium" "$CACHE/background-removal-1.4.5/models/medium.onnx"
