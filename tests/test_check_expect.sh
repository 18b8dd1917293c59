#!/usr/bin/env bash
# test_check_expect.sh: `carve check --expect NAME=FILE` on ONNX node cases
# of libonnx-testdata (issue 11): Selu and Elu at opset 6 lower on every
# target with the default CPU profile, and the original matches the case's
# expected output; a wrong expectation, an unknown output and a malformed
# option are refused with the right exit status and message.
#
#   bash tests/test_check_expect.sh CARVE NODE_DATA_DIR
set -uo pipefail
CARVE=$1 NODE=$2
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

D=$NODE/test_selu/test_data_set_0
# the input as the expected output: beyond tolerance, exit 1, said
run check "$NODE/test_selu/model.onnx" --target lpai --input "x=$D/input_0.pb" --expect "y=$D/input_0.pb"
[ "$rc" -eq 1 ] || fail "wrong expectation: exit $rc, expected 1"
grep -q "^FAIL expected y: float32, 60 elements" "$T/out" || fail "wrong expectation: no FAIL line"
grep -q "60 elements beyond atol 1e-07 rtol 0.001" "$T/out" || fail "wrong expectation: tolerance not said"
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
