#!/usr/bin/env bash
# ort_partitions.sh: every partition carve exports runs in onnxruntime and
# reproduces the original model's values. For each real model (dims fixed)
# and target (htp, gpu): `carve lower --export-partitions`, `carve run
# --dump-values` of the original and of the lowered model (same inputs),
# then tests/ort/partitions.js feeds each partition the original's values of
# its inputs and compares its outputs with the original's values of the
# same names (a value lowering made, absent from the original, comes from
# the lowered run) within the model's tolerance (tests/ort_real_models.sh's
# table). Each partition also passes carve's verifier (carve inspect) and,
# where onnx 1.12 knows its IR and opset, onnx.checker full_check. Lowering
# upgrades every model to opset 21 (src/passes/upgrade.c), past what onnx
# 1.12 knows, so a second lowering with --no-upgrade keeps each model's own
# opset and its partitions go through the full checker (and the verifier).
#
#   tests/ort_partitions.sh CARVE_BINARY MODEL_CACHE [TARGETS...]
# SET=heavy takes the imgly models instead of the light ones (a run of
# imgly small dumps about 4 GiB of values; each is deleted after its pair).
set -uo pipefail
CARVE=$1
CACHE=$2
shift 2
TARGETS=${*:-htp gpu}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$HERE/data
if [ ! -d "$HERE/ort/node_modules/onnxruntime-node" ]; then
  echo "FAIL: onnxruntime-node is not installed: (cd tests/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci)"
  exit 1
fi
VAD="--input sr=$DATA/sr16000.npy --input input=$DATA/audio_1x512.npy --input state=$DATA/state_2x1x128.npy"
P=p2o.DynamicDimension
# name | path below the cache | dims (lower and run) | run inputs | atol rtol
models() {
  if [ "${SET:-light}" = heavy ]; then
    cat <<LIST
imgly_small|background-removal-1.4.5/models/small.onnx|||1e-4 1e-3
imgly_medium|background-removal-1.4.5/models/medium.onnx|||1e-2 1e-2
LIST
    return
  fi
  cat <<LIST
ocr_det|ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx|--dim $P.0=1 --dim $P.1=160 --dim $P.2=160||1e-4 1e-3
ocr_rec|ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx|--dim $P.0=1 --dim $P.1=320||1e-4 1e-3
ocr_cls|ocr-models-1.4.2/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx|--dim $P.0=1 --dim $P.1=48 --dim $P.2=192||1e-4 1e-3
silero_vad|silero-vad-1.0.3/package/weights/silero_vad.onnx||$VAD|1e-4 1e-3
silero_vad_16k_op15|silero-vad-1.0.3/package/weights/silero_vad_16k_op15.onnx||$VAD|1e-4 1e-3
silero_vad_op18_ifless|silero-vad-1.0.3/package/weights/silero_vad_op18_ifless.onnx||$VAD|1e-4 1e-3
oww_alexa|openwakeword-0.1.1/package/models/alexa_v0.1.onnx|||1e-4 1e-3
oww_hey_jarvis|openwakeword-0.1.1/package/models/hey_jarvis_v0.1.onnx|||1e-4 1e-3
oww_embedding|openwakeword-0.1.1/package/models/embedding_model.onnx|--dim unk__314=1||1e-4 1e-3
oww_melspectrogram|openwakeword-0.1.1/package/models/melspectrogram.onnx|--dim batch_size=1 --dim samples=1760||1e-3 1e-3
oww_silero_vad|openwakeword-0.1.1/package/models/silero_vad.onnx||--input sr=$DATA/sr16000.npy --input input=$DATA/audio_1x512.npy --input h=$DATA/state_2x1x64.npy --input c=$DATA/state_2x1x64.npy|1e-4 1e-3
LIST
}
# Known failures, each with its cause (reported as XFAIL, never hidden):
#  none now. ocr_rec on htp was one (a constant read as Squeeze's axes and as
#  data took its int32 copy everywhere; test_legalize_shared.c); imgly_medium
#  on gpu was one until tests/ort read float16 values as values (npy.numbers):
#  the comparison had compared their bit patterns (test_npy.js).
KNOWN=""
pass=0 fail=0 xfail=0 parts=0 ran=0 unreached=0 checked=0 parts12=0
while IFS='|' read -r name rel dims inputs tol; do
  [ -n "$name" ] || continue
  model=$CACHE/$rel
  read -r atol rtol <<<"$tol"
  for t in $TARGETS; do
    dir=$(mktemp -d)
    # shellcheck disable=SC2086
    if [ ! -f "$model" ]; then
      echo "FAIL $name: $model is missing (run scripts/fetch-models.sh)"; fail=$((fail + 1)); rm -rf "$dir"; continue
    fi
    # shellcheck disable=SC2086
    if ! "$CARVE" lower "$model" --target "$t" $dims -o "$dir/low.onnx" --export-partitions "$dir/parts" >"$dir/log" 2>&1 ||
       ! "$CARVE" run "$model" $dims $inputs --random-inputs 7 --dump-values "$dir/orig" >>"$dir/log" 2>&1; then
      echo "FAIL $name on $t: lower or run failed:"; tail -5 "$dir/log" | sed 's/^/    /'; fail=$((fail + 1)); rm -rf "$dir"; continue
    fi
    # the lowered model on the original's inputs
    ins=$(jq -r --arg d "$dir/orig" '.values[] | select(.input) | "--input \(.name)=\($d)/\(.file)"' "$dir/orig/index.json")
    # shellcheck disable=SC2086
    if ! "$CARVE" run "$dir/low.onnx" $ins --dump-values "$dir/low" >>"$dir/log" 2>&1; then
      echo "FAIL $name on $t: running the lowered model failed:"; tail -5 "$dir/log" | sed 's/^/    /'; fail=$((fail + 1)); rm -rf "$dir"; continue
    fi
    n=$(jq '.partitions | length' "$dir/parts/manifest.json")
    ok=1
    for f in $(jq -r '.partitions[].file' "$dir/parts/manifest.json"); do
      "$CARVE" inspect "$dir/parts/$f" >/dev/null 2>>"$dir/log" || { ok=0; echo "    verifier refused $f"; }
    done
    /usr/bin/python3 "$HERE/onnx_check_parts.py" "$dir/parts" >"$dir/check.log" 2>&1 || ok=0
    # shellcheck disable=SC2086
    if "$CARVE" lower "$model" --target "$t" $dims --no-upgrade -o "$dir/low12.onnx" --export-partitions "$dir/parts12" >>"$dir/log" 2>&1; then
      for f in $(jq -r '.partitions[].file' "$dir/parts12/manifest.json"); do
        "$CARVE" inspect "$dir/parts12/$f" >/dev/null 2>>"$dir/log" || { ok=0; echo "    verifier refused $f (--no-upgrade)"; }
      done
      /usr/bin/python3 "$HERE/onnx_check_parts.py" "$dir/parts12" >>"$dir/check.log" 2>&1 || ok=0
      n12=$(jq '.partitions | length' "$dir/parts12/manifest.json")
    else
      ok=0; echo "    lowering with --no-upgrade failed:"; tail -3 "$dir/log" | sed 's/^/    /'
    fi
    node "$HERE/ort/partitions.js" "$dir/parts" "$dir/orig" "$dir/low" --atol "$atol" --rtol "$rtol" >"$dir/ort.log" 2>&1 || ok=0
    # int64 at a Delegate's edge on htp: the manifest says where the body casts it
    lc=$(jq '[.partitions[] | .inputs[], .outputs[] | select(.legalized_as)] | length' "$dir/parts/manifest.json")
    if [ "$t" = htp ] && [ "$name" = silero_vad ] && [ "$lc" -lt 1 ]; then
      ok=0; echo "    silero_vad on htp: no legalized_as in the manifest"
    fi
    c=$(grep -c '^ok' "$dir/check.log")
    r=$(sed -n 's/^partitions \([0-9]*\) checked.*/\1/p' "$dir/ort.log")
    u=$(sed -n 's/.* \([0-9]*\) not reached.*/\1/p' "$dir/ort.log")
    if [ $ok = 1 ]; then
      echo "ok   $name on $t: $n partitions, all through carve's verifier; ${r:-0} run in onnxruntime and match (atol $atol rtol $rtol), ${u:-0} in a branch this input does not take; $c pass onnx's full checker (of ${n12:-0} exported with --no-upgrade, at the model's own opset); $lc edges legalized"
      pass=$((pass + 1)); parts=$((parts + n)); ran=$((ran + ${r:-0})); unreached=$((unreached + ${u:-0})); checked=$((checked + c)); parts12=$((parts12 + ${n12:-0}))
    elif [[ "$KNOWN" == *" $name:$t "* ]]; then
      echo "XFAIL $name on $t (known, see the list above):"; grep -v '^ok\|^skip' "$dir/ort.log" | sed 's/^/    /' | tail -3
      xfail=$((xfail + 1))
    else
      echo "FAIL $name on $t:"; sed 's/^/    /' "$dir/check.log" "$dir/ort.log" | grep -v '^    ok' | tail -12; fail=$((fail + 1))
    fi
    rm -rf "$dir"
  done
done <<<"$(models)"
echo "$pass model/target pairs passed ($parts partitions, all through carve's verifier: $ran run in onnxruntime against the original's values, $unreached in If branches the inputs do not take; $checked of $parts12 --no-upgrade partitions through onnx's full checker), $xfail known failures, $fail failed"
[ $fail -eq 0 ]
