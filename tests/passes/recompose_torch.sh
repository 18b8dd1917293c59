#!/usr/bin/env bash
# recompose_torch.sh: the forms torch (Debian's python3-torch 1.13) exports
# for LayerNorm (opset 13 and 16: ReduceMean/Sub/Pow/.../Add), GELU (Erf)
# and Hardswish (opset 13: x * HardSigmoid(x); at 16 torch writes HardSwish)
# are recomposed after the
# opset upgrade: `carve fold --recompose` leaves one LayerNormalization,
# one Gelu and one HardSwish, and `carve check --target htp` (recomposition
# on by default) agrees with the original.
#   recompose_torch.sh CARVE
set -uo pipefail
CARVE=$1
. "$(dirname "$0")/../lib.sh"
cli_init recompose-torch
/usr/bin/python3 - "$T" <<'PY' || { echo "FAIL: torch export"; echo "0 passed, 1 failed"; exit 1; }
import sys, torch
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.ln = torch.nn.LayerNorm(16)
        s.lin = torch.nn.Linear(16, 16)
    def forward(s, x):
        return torch.nn.functional.hardswish(torch.nn.functional.gelu(s.lin(s.ln(x))))
m = M().eval()
for op in (13, 16):
    torch.onnx.export(m, torch.randn(2, 5, 16), f"{sys.argv[1]}/torch{op}.onnx", opset_version=op,
                      input_names=["x"], output_names=["y"])
PY
for op in 13 16; do
  in=$T/torch$op.onnx
  n=3 # at opset 16 torch writes HardSwish itself
  [ $op = 16 ] && n=2
  "$CARVE" inspect "$in" >"$T/before" 2>&1
  grep -qE '^  LayerNormalization' "$T/before" && fail_only "opset $op: torch already wrote LayerNormalization" || ok
  "$CARVE" fold "$in" --recompose -o "$T/f$op.onnx" 2>"$T/err"
  rc=$?
  [ $rc -eq 0 ] && ok || fail_only "opset $op: carve fold --recompose exits $rc: $(cat "$T/err")"
  grep -q "$n patterns recomposed" "$T/err" && ok || fail_only "opset $op: fold summary: $(cat "$T/err")"
  "$CARVE" inspect "$T/f$op.onnx" >"$T/after" 2>&1
  for o in LayerNormalization Gelu HardSwish; do
    grep -qE "^  $o +1\$" "$T/after" && ok || fail_only "opset $op: not one $o after recomposition: $(cat "$T/after")"
  done
  for o in ReduceMean Erf HardSigmoid Pow; do
    grep -qE "^  $o " "$T/after" && fail_only "opset $op: $o left after recomposition" || ok
  done
  "$CARVE" check "$in" --target htp --random-inputs 3 >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc -eq 0 ] && grep -q "recomposed: $n patterns" "$T/err" && ok ||
    fail_only "opset $op: carve check --target htp exits $rc: $(cat "$T/err" "$T/out")"
done
finish_counts
