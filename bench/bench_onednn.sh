#!/usr/bin/env bash
# bench_onednn.sh: `carve run` of models lowered for the onednn target
# (Delegates run through oneDNN) beside onnxruntime-node, one thread each
# and two threads each, same inputs, same run: OCR det 1x3x640x640, OCR rec
# 1x3x48x320 and imgly small. Prints the load average, oneDNN's ISA, the
# time per run of each and the ratio carve/onnxruntime (goal: <= 0.8 on OCR
# det). Both time their runs after one untimed warm-up run (`carve run
# --warmup 1`); that first run is printed apart and compared too: carve's
# includes compiling the Delegates (oneDNN's JIT) but not reading the
# file, onnxruntime's includes its session creation. Not a timed test: on a shared machine the times move with
# the load.
#   bench/bench_onednn.sh [BUILD_DIR] [RUNS]
set -euo pipefail
# carve runs with libgomp's own wait policy, as a user gets it (its threads
# spin a while between parallel regions, then sleep). On a heavily loaded
# machine spinning costs more than it saves (OCR det at 2 threads, load 14:
# 1531 ms mean spinning, 593 ms passive); on a quiet one sleeping costs
# more (OCR rec at 2 threads, load 1: 14.2 ms passive, 9.3 ms active, 8.6
# ms the default). Set OMP_WAIT_POLICY to measure another policy.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
. "$ROOT/bench/args.sh"
bench_args bench_onednn.sh
CACHE=${CARVE_MODEL_CACHE:-$HOME/.cache/carve-models}
P=p2o.DynamicDimension
CARVE=$BUILD/carve
# run NAME MODEL DIM_ARGS...: lowers for onednn, saves random inputs, then
# times both runtimes at 1 and 2 threads.
run() {
  local name=$1 model=$2
  shift 2
  local dir
  dir=$(mktemp -d)
  if ! "$CARVE" lower "$model" --target onednn "$@" -o "$dir/lowered.onnx" >"$dir/lower.log" 2>&1; then
    echo "bench_onednn.sh: $name: carve lower --target onednn failed:" >&2
    cat "$dir/lower.log" >&2
    rm -rf "$dir"
    return 1
  fi
  "$CARVE" run "$model" --random-inputs 1 "$@" --output-dir "$dir" >/dev/null
  local args=() f
  for f in "$dir"/inputs/*.npy; do
    args+=(--input "$(basename "$f" .npy)=$f")
  done
  echo "$name ($(grep -m1 '^target ' "$dir/lower.log" || echo 'lowered'))"
  local t c o cm om cb ob cf of cfm ofm
  for t in 1 2; do
    c=$(OPENBLAS_NUM_THREADS=$t "$CARVE" run "$dir/lowered.onnx" "${args[@]}" --warmup 1 --repeat "$RUNS" --threads "$t")
    o=$(ORT_THREADS=$t node "$ROOT/tests/ort/bench.js" "$model" "$dir" "$RUNS")
    cf=$(grep '^first run' <<<"$c"); of=$(grep '^first run' <<<"$o")
    c=$(grep '^time per run' <<<"$c"); o=$(grep '^time per run' <<<"$o")
    cfm=$(sed -E 's/^first run: ([0-9.]+) ms.*/\1/' <<<"$cf")
    ofm=$(sed -E 's/^first run: ([0-9.]+) ms.*/\1/' <<<"$of")
    cm=$(sed -E 's/^time per run: ([0-9.]+) ms mean.*/\1/' <<<"$c")
    om=$(sed -E 's/^time per run: ([0-9.]+) ms mean.*/\1/' <<<"$o")
    cb=$(sed -E 's/.* ([0-9.]+) ms best.*/\1/' <<<"$c")
    ob=$(sed -E 's/.* ([0-9.]+) ms best.*/\1/' <<<"$o")
    printf '  %d thread%s\n    carve+oneDNN: %s\n    onnxruntime:  %s\n    ratio carve/onnxruntime: %s mean, %s best\n' \
      "$t" "$([ "$t" = 1 ] || echo s)" "$c" "$o" "$(awk -v a="$cm" -v b="$om" 'BEGIN { printf "%.2f", a / b }')" \
      "$(awk -v a="$cb" -v b="$ob" 'BEGIN { printf "%.2f", a / b }')"
    printf '    first run: carve+oneDNN %s ms (compiling the Delegates included, reading the file not), onnxruntime %s ms (session creation included), ratio %s\n' \
      "$cfm" "$ofm" "$(awk -v a="$cfm" -v b="$ofm" 'BEGIN { printf "%.2f", a / b }')"
  done
  rm -rf "$dir"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown); OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset, libgomp default}"
echo "backend: $("$CARVE" targets 2>/dev/null | grep -m1 'onednn (oneDNN' | sed 's/^ *//' || echo onednn)"
# oneDNN names the instruction set it dispatches to in its verbose header.
isa_dir=$(mktemp -d)
"$CARVE" lower "$CACHE/ocr-models-1.4.2/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" --target onednn \
  --dim $P.0=1 -o "$isa_dir/cls.onnx" >/dev/null 2>&1 || true
isa=$(ONEDNN_VERBOSE=1 "$CARVE" run "$isa_dir/cls.onnx" --random-inputs 1 2>/dev/null | grep 'info,cpu,isa' || true)
echo "ISA: ${isa##*isa:}"
rm -rf "$isa_dir"
run "OCR det 1x3x640x640" "$CACHE/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx" \
  --dim $P.0=1 --dim $P.1=640 --dim $P.2=640
run "OCR rec 1x3x48x320" "$CACHE/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx" \
  --dim $P.0=1 --dim $P.1=320
run "imgly small" "$CACHE/background-removal-1.4.5/models/small.onnx"
