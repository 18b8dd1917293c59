#!/usr/bin/env bash
# map_test.sh: makes a lowering report and its partition map page for one
# case, then checks the page in headless chromium (map_test.js). Files and
# screenshots go to OUT/CASE/.
#
#   tests/browser/map_test.sh CASE BUILD_DIR MODEL_CACHE OUT
#   CASE: example | multi | ocr_det | qdq | imgly | silero_vad | synth43k | future
set -euo pipefail
CASE=$1
BUILD=$2
CACHE=$3
OUT=$4/$CASE
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CARVE=$BUILD/carve
if [ ! -d "$HERE/node_modules/puppeteer-core" ]; then
  echo "map_test: puppeteer-core is not installed in $HERE (run scripts/deps.sh)" >&2
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
P=p2o.DynamicDimension
OCR=$CACHE/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx
extra=()
case $CASE in
  example)
    "$CARVE" lower "$BUILD/example.onnx" --target htp -o "$OUT/lowered.onnx" --report "$OUT/report.json" --html "$OUT/map.html"
    ;;
  multi)
    # two targets in priority order: each node's target and refused_by
    "$CARVE" lower "$BUILD/example.onnx" --target htp+gpu -o "$OUT/lowered.onnx" --report "$OUT/report.json" --html "$OUT/map.html"
    ;;
  ocr_det)
    # dims fixed as tests/lower_real_models.sh does; one Conv kept on CPU
    "$CARVE" lower "$OCR" --target htp --dim $P.0=1 --dim $P.1=96 --dim $P.2=96 --cpu-nodes p2o.Conv.2 \
      -o "$OUT/lowered.onnx" --report "$OUT/report.json"
    # the page from the report and the original model (types from the model)
    "$CARVE" report "$OUT/report.json" --model "$OCR" -o "$OUT/map.html"
    extra=(--node p2o.Conv.2)
    ;;
  qdq)
    # PP-OCRv4 det quantized as quantize_static writes QDQ models
    # (tests/partition/real_qdq_ocr.c); a Conv kept on CPU takes its unit along
    QDQ_SAVE="$OUT/qdq.onnx" "$BUILD/tests/partition/real_qdq_ocr" "$CACHE" >"$OUT/qdq.log" 2>&1 ||
      { tail -20 "$OUT/qdq.log"; exit 1; }
    "$CARVE" lower "$OUT/qdq.onnx" --target htp --cpu-nodes p2o.Conv.2 -o "$OUT/lowered.onnx" \
      --report "$OUT/report.json" --html "$OUT/map.html"
    extra=(--node p2o.Conv.2 --expect-encodings)
    ;;
  synth43k)
    "$BUILD/tests/browser/make_synth" "$OUT/synth.onnx" "$OUT/skip.txt"
    "$CARVE" lower "$OUT/synth.onnx" --target htp --cpu-nodes "$(cat "$OUT/skip.txt")" -o "$OUT/lowered.onnx" \
      --report "$OUT/report.json" --html "$OUT/map.html"
    extra=(--expect-collapsed --max-load-ms 60000)
    ;;
  imgly)
    # IMG.LY background removal (small): 1,084 nodes, over a hundred partitions
    "$CARVE" lower "$CACHE/background-removal-1.4.5/models/small.onnx" --target htp -o "$OUT/lowered.onnx" \
      --report "$OUT/report.json" --html "$OUT/map.html"
    ;;
  silero_vad)
    # Silero VAD: If nodes whose branches hold If nodes, partitioned on their own
    SV=$CACHE/silero-vad-1.0.3/package/weights/silero_vad.onnx
    "$CARVE" lower "$SV" --target htp -o "$OUT/lowered.onnx" --report "$OUT/report.json"
    "$CARVE" report "$OUT/report.json" --model "$SV" -o "$OUT/map.html"
    ;;
  future)
    # a report of a later carve: several targets, reason codes this page
    # does not know, a placement as an object, a recomposed section, If
    # subgraphs, and markup in names and messages
    "$CARVE" report "$HERE/future_report.json" -o "$OUT/map.html"
    cp "$HERE/future_report.json" "$OUT/report.json"
    extra=(--node if_0)
    ;;
  *)
    echo "map_test: unknown case $CASE" >&2
    exit 2
    ;;
esac
ls -l "$OUT/map.html"
node "$HERE/map_test.js" --page "$OUT/map.html" --report "$OUT/report.json" --shots "$OUT" --name "$CASE" "${extra[@]}"
