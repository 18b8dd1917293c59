#!/usr/bin/env bash
# real_models.sh: `carve check --target onednn` on every real model (OCR
# det/rec/cls, silero VAD, openWakeWord; the imgly models with "heavy"): the
# model lowers for onednn and its Delegates, run through oneDNN, agree with
# the reference within check's tolerance. Prints the placement line of each.
#   tests/onednn/real_models.sh CARVE MODEL_CACHE [light|heavy]
set -uo pipefail
CARVE=$1
CACHE=$2
SET=${3:-light}
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# the models of tests/data/real_models.list (OCR det at 640x640, rec at
# 48x320). imgly small quantizes its activations at run time
# (DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul): all 965 nodes in one
# partition, every value bit-identical to the reference but the six Sigmoid
# outputs (last bit: measured max abs error 1.2e-7): check's default
# tolerance. imgly medium is float16, which oneDNN here does not take
# (`unsupported_dtype`): 39 of 461 nodes in 34 partitions, the rest on CPU.
models() {
  DET_SIDE=640 REC_WIDTH=320 real_models "$SET"
}
pass=0
fail=0
while IFS='|' read -r name rel args; do
  [ -n "$name" ] || continue
  model=$CACHE/$rel
  model_missing "$name" "$model" && { fail=$((fail + 1)); continue; }
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
