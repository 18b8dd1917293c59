#!/usr/bin/env bash
# ort_real_models.sh: carve's reference kernels against onnxruntime on the
# real models: `carve run` on seeded inputs, then tests/ort/check.js runs
# onnxruntime (one thread) on the same inputs and compares every output.
#
#   tests/ort_real_models.sh CARVE_BINARY MODEL_CACHE [light|heavy]
set -uo pipefail
CARVE=$1
CACHE=$2
SET=${3:-light}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ ! -d "$HERE/ort/node_modules/onnxruntime-node" ]; then
  echo "FAIL: onnxruntime-node is not installed: (cd tests/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci)"
  echo "0 passed, 1 failed"
  exit 1
fi
. "$HERE/lib.sh"
pass=0
fail=0
list=$(DET_SIDE=160 REC_WIDTH=320 real_models "$SET") # the models: tests/data/real_models.list
while IFS='|' read -r name rel args; do
  [ -n "$name" ] || continue
  model=$CACHE/$rel
  dir=$(mktemp -d)
  read -r atol rtol <<<"$(real_model_tolerance "$name")"
  # shellcheck disable=SC2086
  if model_missing "$name" "$model"; then
    fail=$((fail + 1))
  elif ! "$CARVE" run "$model" --random-inputs 7 $args --output-dir "$dir" >"$dir/run.log" 2>&1; then
    echo "FAIL $name: carve run failed:"
    sed 's/^/    /' "$dir/run.log" | tail -5
    fail=$((fail + 1))
  elif ! node "$HERE/ort/check.js" "$model" "$dir" --atol "$atol" --rtol "$rtol" >"$dir/ort.log" 2>&1; then
    echo "FAIL $name: carve and onnxruntime differ:"
    sed 's/^/    /' "$dir/ort.log" | tail -10
    fail=$((fail + 1))
  else
    echo "ok   $name: $(grep -c '^ok' "$dir/ort.log") outputs match onnxruntime (atol $atol rtol $rtol)"
    sed 's/^/    /' "$dir/ort.log"
    pass=$((pass + 1))
  fi
  rm -rf "$dir"
done <<<"$list"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
