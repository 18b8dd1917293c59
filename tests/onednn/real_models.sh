#!/usr/bin/env bash
# real_models.sh: `carve check --target onednn` on every real model (OCR
# det/rec/cls, silero VAD, openWakeWord; imgly small with "heavy"): the
# model lowers for onednn and its Delegates, run through oneDNN, agree with
# the reference within check's tolerance. Prints the placement line of each.
#   tests/onednn/real_models.sh CARVE MODEL_CACHE [heavy]
set -uo pipefail
CARVE=$1
CACHE=$2
SET=${3:-light}
DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)
P=p2o.DynamicDimension
VAD="--input sr=$DATA/sr16000.npy --input input=$DATA/audio_1x512.npy --input state=$DATA/state_2x1x128.npy"
models() {
  if [ "$SET" = heavy ]; then
    # imgly small quantizes its activations at run time (DynamicQuantizeLinear
    # on CPU, then ConvInteger): oneDNN's last-bit differences move some
    # values across a quantization step, which the following layers carry
    # (measured: max abs error 0.0403 on input.1252, 0.00699 on the mask).
    echo "imgly_small|background-removal-1.4.5/models/small.onnx|--atol 0.05 --rtol 1e-3"
    return
  fi
  cat <<LIST
ocr_det|ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx|--dim $P.0=1 --dim $P.1=640 --dim $P.2=640
ocr_rec|ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx|--dim $P.0=1 --dim $P.1=320
ocr_cls|ocr-models-1.4.2/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx|--dim $P.0=1 --dim $P.1=48 --dim $P.2=192
silero_vad|silero-vad-1.0.3/package/weights/silero_vad.onnx|$VAD
silero_vad_16k_op15|silero-vad-1.0.3/package/weights/silero_vad_16k_op15.onnx|$VAD
silero_vad_op18_ifless|silero-vad-1.0.3/package/weights/silero_vad_op18_ifless.onnx|$VAD
oww_alexa|openwakeword-0.1.1/package/models/alexa_v0.1.onnx|
oww_hey_jarvis|openwakeword-0.1.1/package/models/hey_jarvis_v0.1.onnx|
oww_embedding|openwakeword-0.1.1/package/models/embedding_model.onnx|--dim unk__314=1
oww_melspectrogram|openwakeword-0.1.1/package/models/melspectrogram.onnx|--dim batch_size=1 --dim samples=1760
LIST
}
pass=0
fail=0
while IFS='|' read -r name rel args; do
  [ -n "$name" ] || continue
  model=$CACHE/$rel
  if [ ! -f "$model" ]; then
    echo "FAIL $name: $model is missing (run scripts/fetch-models.sh)"
    fail=$((fail + 1))
    continue
  fi
  # shellcheck disable=SC2086
  if out=$("$CARVE" check "$model" --target onednn --random-inputs 7 $args 2>&1); then
    echo "ok   $name: $(grep -m1 '^target ' <<<"$out")"
    pass=$((pass + 1))
  else
    echo "FAIL $name:"
    sed 's/^/  /' <<<"$out" | tail -20
    fail=$((fail + 1))
  fi
done < <(models)
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
