#!/usr/bin/env bash
# test_check_expect.sh: `carve check --expect NAME=FILE` on ONNX node cases
# of libonnx-testdata (issue 11): Selu and Elu at opset 6 lower on every
# target with the default CPU profile, and the original matches the case's
# expected output; a wrong expectation, an unknown output and a malformed
# option are refused with the right exit status and message.
#
#   bash tests/test_check_expect.sh CARVE NODE_DATA_DIR [opset]
#
# With `opset` (CTest cli.newer_opset): a model at ONNX opset 99 is refused
# by `carve lower` (exit 1, unsupported_opset naming the node, the domain,
# the version and the newest carve knows, no output written) and lowered
# with --allow-newer-opset; opsets imported but used by no node are not
# checked.
set -uo pipefail
CARVE=$1 NODE=$2 WHAT=${3:-expect}
failures=0
T=$(mktemp -d "${TMPDIR:-/tmp}/carve-expect-XXXXXX")
trap 'rm -rf "$T"' EXIT
run() {
  "$CARVE" "$@" >"$T/out" 2>"$T/err"
  rc=$?
}
fail() {
  echo "FAIL: $*"; echo "--- stdout"; cat "$T/out"; echo "--- stderr"; cat "$T/err"
  failures=$((failures + 1))
}

if [ "$WHAT" = opset ]; then
  /usr/bin/python3 - "$T" <<'PY'
import sys
from onnx import helper, TensorProto
def model(v, path):
    n = helper.make_node("Add", ["a", "b"], ["c"], name="add")
    io = lambda s: helper.make_tensor_value_info(s, TensorProto.FLOAT, [2])
    g = helper.make_graph([n], "g", [io("a"), io("b")], [io("c")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", v), helper.make_opsetid("ai.onnx.ml", 99),
                                            helper.make_opsetid("com.unused", 1000)])
    m.ir_version = 10
    open(path, "wb").write(m.SerializeToString())
model(99, sys.argv[1] + "/add99.onnx")
model(21, sys.argv[1] + "/add21.onnx")
PY
  echo old >"$T/out99.onnx"
  run lower "$T/add99.onnx" --target htp -o "$T/out99.onnx"
  [ "$rc" -eq 1 ] || fail "opset 99: exit $rc, expected 1"
  grep -q "carve lower: unsupported_opset: node 'add' (Add) is in domain ai.onnx at opset 99, newer than carve knows (the newest it knows is 21)" "$T/err" || fail "opset 99: message"
  [ "$(cat "$T/out99.onnx")" = old ] || fail "opset 99: the old output was replaced"
  run check "$T/add99.onnx" --target gpu
  [ "$rc" -eq 1 ] && grep -q "unsupported_opset: node 'add'" "$T/err" || fail "check at opset 99: exit $rc"
  run lower "$T/add99.onnx" --target htp -o "$T/out99.onnx" --allow-newer-opset
  [ "$rc" -eq 0 ] || fail "opset 99 with --allow-newer-opset: exit $rc"
  run lower "$T/add21.onnx" --target htp -o "$T/out21.onnx"
  [ "$rc" -eq 0 ] || fail "opset 21 with unused ai.onnx.ml 99 and com.unused 1000: exit $rc"
  [ "$failures" -eq 0 ] && echo "newer_opset: ok" || { echo "newer_opset: $failures failed"; exit 1; }
  exit 0
fi

for c in test_selu test_selu_default test_elu test_elu_default test_hardsigmoid test_prelu_example; do
  D=$NODE/$c/test_data_set_0
  args=()
  i=0
  for name in $("$CARVE" inspect "$NODE/$c/model.onnx" --json | /usr/bin/python3 -c 'import json,sys; print(" ".join(i["name"] for i in json.load(sys.stdin)["inputs"]))'); do
    args+=(--input "$name=$D/input_$i.pb"); i=$((i + 1))
  done
  out=$("$CARVE" inspect "$NODE/$c/model.onnx" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["outputs"][0]["name"])')
  run check "$NODE/$c/model.onnx" --target htp,gpu,lpai,cpu "${args[@]}" --expect "$out=$D/output_0.pb"
  [ "$rc" -eq 0 ] || fail "$c: exit $rc, expected 0"
  grep -q "^ok   expected $out: " "$T/out" || fail "$c: no 'ok   expected $out' line"
  [ "$(grep -c '^ok   ' "$T/out")" -eq 5 ] || fail "$c: expected 5 ok lines (expected + 4 targets)"
done

# bfloat16 expected values stored as uint16 (ONNX 1.12's data) are read as bfloat16
c=test_cast_FLOAT_to_BFLOAT16
run check "$NODE/$c/model.onnx" --target cpu --input "input=$NODE/$c/test_data_set_0/input_0.pb" \
  --expect "output=$NODE/$c/test_data_set_0/output_0.pb"
[ "$rc" -eq 0 ] || fail "$c: exit $rc, expected 0"
grep -q "^ok   expected output: bfloat16" "$T/out" || fail "$c: no 'ok   expected output: bfloat16' line"

D=$NODE/test_selu/test_data_set_0
# the input as the expected output: beyond tolerance, exit 1, said
run check "$NODE/test_selu/model.onnx" --target lpai --input "x=$D/input_0.pb" --expect "y=$D/input_0.pb"
[ "$rc" -eq 1 ] || fail "wrong expectation: exit $rc, expected 1"
grep -q "^FAIL expected y: float32, 60 elements" "$T/out" || fail "wrong expectation: no FAIL line"
grep -q "60 elements beyond atol 1e-07 rtol 0.001" "$T/out" || fail "wrong expectation: tolerance not said"
# expected values of another shape and dtype
run check "$NODE/test_selu/model.onnx" --target lpai --input "x=$D/input_0.pb" \
  --expect "y=$NODE/test_cast_FLOAT_to_BFLOAT16/test_data_set_0/output_0.pb"
[ "$rc" -eq 1 ] || fail "other shape: exit $rc, expected 1"
grep -q "^FAIL expected y: the original gives another dtype or shape than expected" "$T/out" || fail "other shape: message"
# an output the model does not have
run check "$NODE/test_selu/model.onnx" --target lpai --input "x=$D/input_0.pb" --expect "z=$D/output_0.pb"
[ "$rc" -eq 1 ] || fail "unknown output: exit $rc, expected 1"
grep -q "carve check: --expect z: the model has no output named 'z'" "$T/err" || fail "unknown output: message"
# a missing file
run check "$NODE/test_selu/model.onnx" --target lpai --input "x=$D/input_0.pb" --expect "y=$T/none.pb"
[ "$rc" -eq 1 ] || fail "missing file: exit $rc, expected 1"
grep -q "carve check: --expect y: .*none.pb" "$T/err" || fail "missing file: message"
# malformed
for bad in y y= =f; do
  run check "$NODE/test_selu/model.onnx" --target lpai --expect "$bad"
  [ "$rc" -eq 2 ] || fail "--expect $bad: exit $rc, expected 2"
  grep -q "carve check: --expect takes NAME=FILE" "$T/err" || fail "--expect $bad: message"
done
[ "$failures" -eq 0 ] && echo "check_expect: ok" || { echo "check_expect: $failures failed"; exit 1; }
