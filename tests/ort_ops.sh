#!/usr/bin/env bash
# ort_ops.sh: carve against onnxruntime on the single-op models ort_cases
# writes (ops without cases in Debian's ONNX 1.12 test data, and cases named
# *_exact that must match onnxruntime bit for bit).
#   tests/ort_ops.sh ORT_CASES_BINARY CARVE_BINARY
set -uo pipefail
CASES=$1
CARVE=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ ! -d "$HERE/ort/node_modules/onnxruntime-node" ]; then
  echo "FAIL: onnxruntime-node is not installed: (cd tests/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci)"
  echo "0 passed, 1 failed"
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$CASES" "$dir" >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
pass=0
fail=0
for model in "$dir"/*.onnx; do
  name=$(basename "$model" .onnx)
  out=$dir/$name
  tol=1e-4
  case $name in *_exact) tol=0 ;; esac
  if ! "$CARVE" run "$model" --random-inputs 3 --output-dir "$out" >"$out.log" 2>&1; then
    echo "FAIL $name: carve run: $(tail -1 "$out.log")"
    fail=$((fail + 1))
  elif ! node "$HERE/ort/check.js" "$model" "$out" --atol $tol --rtol $tol >"$out.ort" 2>&1; then
    echo "FAIL $name: $(tr '\n' ' ' <"$out.ort")"
    fail=$((fail + 1))
  else
    echo "ok   $name: $(grep -o 'max_abs [^ ]*' "$out.ort" | head -1)"
    pass=$((pass + 1))
  fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
