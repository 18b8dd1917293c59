#!/usr/bin/env bash
# lower_real_models.sh: every real model lowers on every built-in target and
# `carve check` passes on it (lowered outputs equal the original's). The
# lowering summary per model and target (nodes delegated, partitions, rounds,
# folding) is compared with tests/golden/lower/<model>.txt, so a change in
# placement is seen. UPDATE=1 rewrites the goldens. The heavy models
# (1x3x1024x1024 background removal, minutes per run here) run `carve check`
# on htp and are lowered (not run) on the other targets, to keep CI short.
# htp+gpu is one joint lowering for both targets in priority order (the heavy
# models are lowered for it too, not run).
#
#   tests/lower_real_models.sh CARVE_BINARY MODEL_CACHE [light|heavy]
set -uo pipefail
CARVE=$1
CACHE=$2
SET=${3:-light}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GOLD=$HERE/golden/lower
TARGETS=htp,gpu,lpai,cpu,htp+gpu
. "$HERE/lib.sh"

pass=0
fail=0
# the models: tests/data/real_models.list, the OCR models at small sizes as
# they are run on every target
list=$(DET_SIDE=96 REC_WIDTH=160 real_models "$SET")
while IFS='|' read -r name rel args; do
  [ -n "$name" ] || continue
  model=$CACHE/$rel
  model_missing "$name" "$model" && { fail=$((fail + 1)); continue; }
  log=$(mktemp)
  if [ "$SET" = heavy ]; then
    # shellcheck disable=SC2086
    "$CARVE" check "$model" --target htp --random-inputs 7 $args >"$log.out" 2>"$log"
    rc=$?
    for t in gpu lpai cpu htp+gpu; do
      # shellcheck disable=SC2086
      "$CARVE" lower "$model" --target $t -o "$log.$t.onnx" $args 2>>"$log" >/dev/null || rc=$?
      rm -f "$log.$t.onnx"
    done
  else
    # shellcheck disable=SC2086
    "$CARVE" check "$model" --target $TARGETS --random-inputs 7 $args >"$log.out" 2>"$log"
    rc=$?
  fi
  summary=$(grep -E '^(target |folding:)' "$log")
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: carve check exited $rc"
    sed 's/^/    /' "$log" "$log.out" | tail -20
    fail=$((fail + 1))
  elif [ "${UPDATE:-0}" = 1 ]; then
    printf '%s\n' "$summary" >"$GOLD/$name.txt"
    echo "updated $GOLD/$name.txt"
    pass=$((pass + 1))
  elif ! diff -u "$GOLD/$name.txt" <(printf '%s\n' "$summary") >"$log.diff"; then
    echo "FAIL $name: the lowering summary changed (UPDATE=1 to accept):"
    sed 's/^/    /' "$log.diff"
    fail=$((fail + 1))
  else
    echo "ok   $name ($(grep -c '^ok' "$log.out") outputs checked)"
    pass=$((pass + 1))
  fi
  rm -f "$log" "$log.out" "$log.diff"
done <<<"$list"

# The opset upgrade (docs/upgrade.md) on PP-OCRv4 rec (opset 9): with it the
# model is one htp partition (above); --no-upgrade leaves its three old
# Softmax nodes on CPU; `carve fold` says what it upgraded.
if [ "$SET" = light ]; then
  rec=$CACHE/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx
  tmp=$(mktemp -d)
  P=p2o.DynamicDimension
  "$CARVE" lower "$rec" --target htp --no-upgrade -o "$tmp/l.onnx" --dim $P.0=1 --dim $P.1=160 2>"$tmp/err" >/dev/null
  if grep -q "in 3 partitions, 3 on CPU" "$tmp/err" && grep -q "3 unsupported_opset" "$tmp/err"; then
    echo "ok   ocr_rec --no-upgrade: 3 partitions, the old Softmax on CPU"; pass=$((pass + 1))
  else
    echo "FAIL ocr_rec --no-upgrade:"; sed 's/^/    /' "$tmp/err"; fail=$((fail + 1))
  fi
  "$CARVE" fold "$rec" -o "$tmp/f.onnx" 2>"$tmp/err" && "$CARVE" fold "$rec" -o "$tmp/g.onnx" --no-upgrade 2>"$tmp/err2"
  if grep -q "upgraded: opset 9 -> 21" "$tmp/err" && ! grep -q "upgraded" "$tmp/err2" &&
     "$CARVE" inspect "$tmp/f.onnx" | grep -q "ai.onnx=21" && "$CARVE" inspect "$tmp/g.onnx" | grep -q "ai.onnx=9"; then
    echo "ok   ocr_rec carve fold: upgraded to opset 21, --no-upgrade keeps 9"; pass=$((pass + 1))
  else
    echo "FAIL ocr_rec carve fold upgrade:"; sed 's/^/    /' "$tmp/err" "$tmp/err2"; fail=$((fail + 1))
  fi
  rm -rf "$tmp"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
