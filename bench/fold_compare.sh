#!/usr/bin/env bash
# fold_compare.sh: how many nodes `carve fold` leaves, next to onnxruntime's
# basic graph optimizations (constant folding and the other rewrites that
# keep the graph portable), on the models of issue 5. Nodes are counted
# across all graphs, subgraphs included (`carve inspect`'s count).
#
#   bash bench/fold_compare.sh [CARVE]      CARVE defaults to build/carve
#
# Needs the models (scripts/fetch-models.sh, in ${CARVE_MODEL_CACHE:-
# $HOME/.cache/carve-models}) and onnxruntime-node in tests/ort
# (cd tests/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci).
#
# For each model the folded model is run on carve's reference kernels with
# seeded inputs and its outputs are compared with onnxruntime running the
# original model, and with onnxruntime running the folded model
# (tests/ort/check.js: |a - b| <= 1e-4 + 1e-4 |b|). Prints a Markdown table;
# exits 1 when an output differs or carve leaves more nodes than onnxruntime.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CARVE=${1:-$ROOT/build/carve}
CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
ORT=$ROOT/tests/ort

die() { echo "fold_compare: $*" >&2; exit 1; }
[ -x "$CARVE" ] || die "no carve binary at $CARVE (build first, or pass its path)"
[ -d "$ORT/node_modules/onnxruntime-node" ] || die "onnxruntime-node is missing: cd tests/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci"
command -v node >/dev/null || die "node is missing: run scripts/deps.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/carve-fold-XXXXXX")
trap 'rm -rf "$T"' EXIT

# Seeded inputs for silero VAD: 512 samples at 16 kHz, a small state.
node -e '
  const npy = require(process.argv[1]);
  let s = 12345n;
  const rnd = () => { s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
                      return Number(s >> 11n) / 9007199254740992; };
  const f = n => Float32Array.from({length: n}, () => rnd() * 2 - 1);
  npy.write(process.argv[2] + "/input.npy", "float32", [1, 512], f(512));
  npy.write(process.argv[2] + "/state.npy", "float32", [2, 1, 128], f(256).map(x => x * 0.1));
  npy.write(process.argv[2] + "/sr.npy", "int64", [], BigInt64Array.from([16000n]));
' "$ORT/npy.js" "$T"

OCR=ocr-models-1.4.2/package/assets
DYN="--dim p2o.DynamicDimension.0=1 --dim p2o.DynamicDimension.1"
# label | file in the cache | `carve run` arguments for its inputs
MODELS=(
  "OCR det|$OCR/ch_PP-OCRv4_det_infer.onnx|$DYN=64 --dim p2o.DynamicDimension.2=96"
  "OCR rec|$OCR/ch_PP-OCRv4_rec_infer.onnx|$DYN=96"
  "OCR cls|$OCR/ch_ppocr_mobile_v2.0_cls_infer.onnx|$DYN=48 --dim p2o.DynamicDimension.2=192"
  "silero VAD v5|silero-vad-1.0.3/package/weights/silero_vad.onnx|--input input=$T/input.npy --input state=$T/state.npy --input sr=$T/sr.npy"
)

nodes() { "$CARVE" inspect "$1" | sed -n 's/^nodes: \([0-9]*\) in .*/\1/p'; }

echo "| model | nodes | onnxruntime basic | carve fold | outputs |"
echo "|---|---:|---:|---:|---|"
status=0
for entry in "${MODELS[@]}"; do
  IFS='|' read -r label file args <<< "$entry"
  model=$CACHE/$file
  [ -f "$model" ] || die "$model is missing: run scripts/fetch-models.sh"
  base=$T/$(basename "$file" .onnx)
  node "$ORT/optimize.js" "$model" "$base.ort.onnx" --level basic
  "$CARVE" fold "$model" -o "$base.fold.onnx" 2> "$base.fold.log" || die "$label: carve fold failed: $(cat "$base.fold.log")"
  n0=$(nodes "$model") n1=$(nodes "$base.ort.onnx") n2=$(nodes "$base.fold.onnx")
  # shellcheck disable=SC2086
  "$CARVE" run "$base.fold.onnx" --random-inputs 1 $args --output-dir "$base.run" > /dev/null
  outputs=same
  if ! node "$ORT/check.js" "$model" "$base.run" > "$base.check1" 2>&1; then
    outputs="DIFFER from the original"
    status=1
  elif ! node "$ORT/check.js" "$base.fold.onnx" "$base.run" > "$base.check2" 2>&1; then
    outputs="onnxruntime disagrees on the folded model"
    status=1
  fi
  if [ "$n2" -gt "$n1" ]; then
    outputs="$outputs; more nodes than onnxruntime"
    status=1
  fi
  echo "| $label | $n0 | $n1 | $n2 | $outputs |"
done
exit $status
