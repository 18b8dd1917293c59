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
# own bytes through a synced temporary, what no lowering can go below;
# +start adds carve's process start (`carve --version`, median of 21 runs
# timed as carve's runs are): a lowering in a process of its own cannot go
# below that sum. The last two columns: onnxruntime's first session in each
# node process (the warm-up, after require() loaded the native library:
# what a process converting one model pays) and carve's ratio to it.
#   bench/lower_vs_ort.sh [BUILD_DIR] [RUNS] [TARGET]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
TARGET=${3:-htp}
. "$ROOT/bench/args.sh"
bench_args lower_vs_ort.sh
CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
OCR=$CACHE/ocr-models-1.4.2/package/assets
P=p2o.DynamicDimension
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# ms CMD...: runs CMD (what it prints dropped) and prints its wall time in
# ms; fails, naming CMD, when CMD does
ms() {
  local t0=$EPOCHREALTIME
  if ! "$@" >/dev/null 2>&1; then
    echo "lower_vs_ort.sh: failed: $*" >&2
    return 1
  fi
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}

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
  ms "${cmd[@]}" >/dev/null # warm-up: the file in the page cache
  local i o t times=() otimes=() ofirst=()
  for ((i = 0; i < RUNS; i++)); do
    t=$(ms "${cmd[@]}")
    times+=("$t")
    # "median M ms; runs R; first F ms"
    o=$(node "$ROOT/tests/ort/session.js" "$model" 1 "$@")
    o=${o#median }
    otimes+=("${o%% ms*}")
    o=${o##*first }
    ofirst+=("${o%% ms*}")
  done
  local c om of f=- fs=-
  c=$(printf '%s\n' "${times[@]}" | median)
  om=$(printf '%s\n' "${otimes[@]}" | median)
  of=$(printf '%s\n' "${ofirst[@]}" | median)
  # the I/O floor: the model's bytes written copy-free through a synced temporary
  if [ -x "$BUILD/bench/io_floor" ]; then
    f=$("$BUILD/bench/io_floor" "$model" "$TMP/floor.onnx" "$RUNS" | awk '/^copy-free/ { print $3 }')
    fs=$(awk -v a="$f" -v b="$START" 'BEGIN { printf "%.1f", a + b }')
  fi
  printf '%-22s %8.1f %8.1f %6.2f %7s %7s %8.1f %6.2f   carve: %s; onnxruntime: %s; first: %s\n' "$name" "$c" \
    "$om" "$(awk -v a="$c" -v b="$om" 'BEGIN { print a / b }')" "$f" "$fs" "$of" \
    "$(awk -v a="$c" -v b="$of" 'BEGIN { print a / b }')" "${times[*]}" "${otimes[*]}" "${ofirst[*]}"
}

# carve's process start: `carve --version` (the second start included, as
# every command has it), timed as the lowering runs are
for ((i = 0; i < 21; i++)); do
  t=$(ms "$BUILD/carve" --version)
  echo "$t"
done >"$TMP/start"
START=$(median <"$TMP/start")

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); carve lower --target $TARGET (whole process) vs onnxruntime"
echo "session creation (basic, 1 thread); medians of $RUNS runs in ms"
echo "floor: bench/io_floor's copy-free median, the model's bytes mapped, written to a temporary, fsynced, renamed;"
echo "+start: the floor plus carve's process start ($START ms, carve --version, median of 21);"
echo "1st: onnxruntime's first session in each node process (after require()), and carve's ratio to it"
printf '%-22s %8s %8s %6s %7s %7s %8s %6s\n' model carve ort ratio floor +start "ort 1st" "ratio"
bench "OCR det 1x3x640x640" "$OCR/ch_PP-OCRv4_det_infer.onnx" $P.0=1 $P.1=640 $P.2=640
bench "OCR rec 1x3x48x320" "$OCR/ch_PP-OCRv4_rec_infer.onnx" $P.0=1 $P.1=320
bench "OCR cls 1x3x48x192" "$OCR/ch_ppocr_mobile_v2.0_cls_infer.onnx" $P.0=1 $P.1=48 $P.2=192
bench "silero VAD v5" "$CACHE/silero-vad-1.0.3/package/weights/silero_vad.onnx"
bench "imgly small" "$CACHE/background-removal-1.4.5/models/small.onnx"
bench "imgly medium" "$CACHE/background-removal-1.4.5/models/medium.onnx"
