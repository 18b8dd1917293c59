#!/usr/bin/env bash
# qdq_artifacts.sh: the artifacts of a quantized model, end to end through
# the CLI. The static-QDQ PP-OCRv4 det (tests/partition/real_qdq_ocr.c
# writes it) lowered for htp with --export-partitions, once keeping its Q/DQ
# nodes and once with --strip-qdq: every partition passes onnx's full
# checker and carve's verifier, the kept ones reproduce the original's
# values in onnxruntime, and `carve qdq` on each stripped partition with its
# encodings file (1.0.0 and 0.6.1) gives back the kept partition's outputs
# bit for bit. Then `carve qdq`'s refusals: exit 1, a message naming the
# entry, and no file written.
#
#   tests/qdq_artifacts.sh CARVE_BINARY REAL_QDQ_OCR_BINARY MODEL_CACHE
set -uo pipefail
CARVE=$1
QDQ=$2
CACHE=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }

QDQ_SAVE=$dir/qdq.onnx "$QDQ" "$CACHE" >"$dir/q.log" 2>&1 || { tail -5 "$dir/q.log"; fail "real_qdq_ocr"; }
[ -f "$dir/qdq.onnx" ] || { echo "no quantized model"; exit 1; }
"$CARVE" run "$dir/qdq.onnx" --random-inputs 3 --dump-values "$dir/orig" >/dev/null 2>&1 || fail "run --dump-values"
for v in 1.0.0 0.6.1; do
  k=$dir/kept$v s=$dir/strip$v
  "$CARVE" lower "$dir/qdq.onnx" --target htp -o "$dir/l.onnx" --export-partitions "$k" --encodings-version $v >/dev/null 2>&1 &&
    "$CARVE" lower "$dir/qdq.onnx" --target htp -o "$dir/l.onnx" --export-partitions "$s" --strip-qdq --encodings-version $v >/dev/null 2>&1 ||
    fail "lower --export-partitions ($v)"
  [ "$(jq -r .encodings_version "$s/manifest.json")" = $v ] && ok "manifest says encodings version $v" || fail "manifest version $v"
  # lowering may raise the opset past what onnx 1.12 knows (carve's upgrade): those are skipped, never failed
  /usr/bin/python3 "$HERE/onnx_check_parts.py" "$k" >"$dir/c1" 2>&1 && /usr/bin/python3 "$HERE/onnx_check_parts.py" "$s" >"$dir/c2" 2>&1 &&
    ok "kept and stripped partitions: onnx's full checker passes every one it knows ($v): $(cat "$dir/c1" "$dir/c2" | grep -c '^ok') checked, $(cat "$dir/c1" "$dir/c2" | grep -c '^skip') past onnx 1.12" ||
    { cat "$dir/c1" "$dir/c2"; fail "checker ($v)"; }
  # carve's upgrade puts them at opset 21, past onnx 1.12: lowered again with
  # --no-upgrade, at the model's own opset, the checker must check them all
  "$CARVE" lower "$dir/qdq.onnx" --target htp --no-upgrade -o "$dir/l.onnx" --export-partitions "$k.own" --encodings-version $v >/dev/null 2>&1 &&
    "$CARVE" lower "$dir/qdq.onnx" --target htp --no-upgrade -o "$dir/l.onnx" --export-partitions "$s.own" --strip-qdq --encodings-version $v >/dev/null 2>&1 ||
    fail "lower --no-upgrade --export-partitions ($v)"
  /usr/bin/python3 "$HERE/onnx_check_parts.py" "$k.own" >"$dir/c1" 2>&1 && /usr/bin/python3 "$HERE/onnx_check_parts.py" "$s.own" >"$dir/c2" 2>&1 &&
    ! grep -q '^skip' "$dir/c1" "$dir/c2" && grep -q '^ok' "$dir/c1" && grep -q '^ok' "$dir/c2" &&
    ok "kept and stripped partitions at the model's own opset (--no-upgrade): onnx's full checker passes all $(cat "$dir/c1" "$dir/c2" | grep -c '^ok') ($v)" ||
    { cat "$dir/c1" "$dir/c2"; fail "checker on --no-upgrade partitions ($v)"; }
  node "$HERE/ort/partitions.js" "$k" "$dir/orig" --atol 1e-4 --rtol 1e-3 >"$dir/o" 2>&1 && ok "QDQ partitions reproduce the original in onnxruntime ($v): $(head -1 "$dir/o")" ||
    { cat "$dir/o"; fail "onnxruntime on the QDQ partitions ($v)"; }
  n=0
  for f in $(jq -r '.partitions[].file' "$s/manifest.json"); do
    stem=${f%.onnx}
    enc=$(jq -r --arg f "$f" '.partitions[] | select(.file == $f) | .encodings' "$s/manifest.json")
    [ "$(jq -r --arg f "$f" '.partitions[] | select(.file == $f) | .qdq' "$s/manifest.json")" = stripped ] || fail "$f not marked stripped"
    "$CARVE" inspect "$s/$f" >/dev/null 2>&1 || fail "carve's verifier refuses $s/$f"
    ! "$CARVE" inspect --json "$s/$f" | jq -e '.ops | keys[] | select(. == "QuantizeLinear" or . == "DequantizeLinear")' >/dev/null ||
      fail "$s/$f still holds Q/DQ nodes"
    "$CARVE" qdq "$s/$f" --encodings "$s/$enc" -o "$dir/rt.onnx" >/dev/null 2>&1 || { fail "carve qdq $f ($v)"; continue; }
    rm -rf "$dir/a" "$dir/b"
    "$CARVE" run "$k/$f" --input "x=$dir/orig/x.npy" --output-dir "$dir/a" >/dev/null 2>&1 &&
      "$CARVE" run "$dir/rt.onnx" --input "x=$dir/orig/x.npy" --output-dir "$dir/b" >/dev/null 2>&1 || fail "run $f"
    for o in "$dir"/a/*.npy; do
      cmp -s "$o" "$dir/b/$(basename "$o")" || fail "$stem: $(basename "$o") differs after strip -> encodings -> carve qdq ($v)"
      n=$((n + 1))
    done
  done
  [ $n -gt 0 ] && ok "strip -> $v encodings -> carve qdq: $n outputs bit-identical to the QDQ partitions'" || fail "nothing compared ($v)"
done

# refusals: exit 1, a message naming the entry, no file
f=$dir/strip1.0.0/Delegate_0.onnx
refuse() {
  local what=$1 want=$2 json=$3
  printf '%s' "$json" >"$dir/bad.encodings"
  rm -f "$dir/never.onnx"
  "$CARVE" qdq "$f" --encodings "$dir/bad.encodings" -o "$dir/never.onnx" 2>"$dir/err"
  local rc=$?
  if [ $rc -eq 1 ] && grep -qF "$want" "$dir/err" && [ ! -e "$dir/never.onnx" ] && ! ls "$dir"/never.onnx.tmp* >/dev/null 2>&1; then
    ok "$what: exit 1, '$want', no file"
  else
    fail "$what: exit $rc, $(cat "$dir/err")"
  fi
}
refuse "a name the model lacks" "'no_such' (activation encoding): the model's main graph has no value of this name" \
  '{"version": "1.0.0", "activation_encodings": [{"name": "no_such", "dtype": "INT", "enc_type": "PER_TENSOR", "bw": 8, "is_sym": false, "scale": [0.1], "offset": [0]}]}'
refuse "a bitwidth ONNX cannot hold" "bitwidth 12: ONNX has no 12-bit integer type" \
  '{"version": "1.0.0", "activation_encodings": [{"name": "x", "dtype": "INT", "enc_type": "PER_TENSOR", "bw": 12, "is_sym": false, "scale": [0.1], "offset": [0]}]}'
refuse "a malformed file" "not valid JSON" '{"version": "1.0.0", "activation_encodings": ['
refuse "a 0.6.1 entry without offset" "field 'offset' missing" '{"version": "0.6.1", "activation_encodings": {"x": [{"bitwidth": 8, "scale": 0.1}]}}'
printf '%s' '{"version": "1.0.0", "activation_encodings": [{"name": "x", "dtype": "INT", "enc_type": "PER_TENSOR", "bw": 16, "is_sym": false, "scale": [0.1], "offset": [0]}]}' >"$dir/b16.encodings"
"$CARVE" qdq "$f" --encodings "$dir/b16.encodings" -o "$dir/b16.onnx" 2>"$dir/err" &&
  [ "$("$CARVE" inspect --json "$dir/b16.onnx" | jq '.opsets["ai.onnx"] // .opsets[""] // 0')" -ge 21 ] &&
  ok "16 bits at opset 13: carve's upgrade raises the opset, then applies" || fail "16 bits at opset 13: $(cat "$dir/err")"
"$CARVE" qdq "$f" --encodings "$dir/none.encodings" -o "$dir/never.onnx" 2>"$dir/err"
[ $? -eq 1 ] && grep -q "none.encodings" "$dir/err" && [ ! -e "$dir/never.onnx" ] && ok "a missing encodings file: exit 1" || fail "missing file"
"$CARVE" lower "$dir/qdq.onnx" --target htp -o "$dir/never.onnx" --strip-qdq 2>"$dir/err"
[ $? -eq 2 ] && grep -q "export-partitions" "$dir/err" && ok "--strip-qdq without --export-partitions: exit 2" || fail "usage"
"$CARVE" qdq "$f" --encodings "$dir/strip1.0.0/Delegate_0.encodings" -o "$f" 2>"$dir/err"
[ $? -eq 1 ] && ok "carve qdq never writes onto its input" || fail "wrote onto the input"
echo "$fails failed"
[ $fails -eq 0 ]
