#!/usr/bin/env bash
# fuzz_replay_args.sh FUZZ_REPLAY TESTDATA_DIR: fuzz_replay refuses a
# --suffix that is not 1 to 64 bytes in hex (exit 2, a message naming it,
# nothing run), and fails (exit 1, naming the model) when a model that
# loads stops loading with the suffix: the suffix must leave the model
# whole for its choices to be tried at all.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
CARVE=$1 RUN_NAME=fuzz_replay
DATA=$2
cli_init fuzz-replay-args

for bad in 0g abc ""; do
  refused "fuzz_replay: --suffix '$bad' is not 1 to 64 bytes in hex" --suffix "$bad" "$DATA"
done
refused "fuzz_replay: --suffix '$(printf 'a%.0s' {1..130})' is not 1 to 64 bytes in hex" \
  --suffix "$(printf 'a%.0s' {1..130})" "$DATA"
# ff: a field tag with no end, so the models no longer parse
run --suffix ff --name model.onnx "$DATA"
expect_rc 1
expect_err "loads, but not with the suffix"
grep -q "inputs ran without a finding" "$T/out" && fail "a run counted as passed"
# the suffix the tests use leaves every model whole
run --suffix c23e03000181 --name model.onnx "$DATA"
expect_rc 0
expect_out "inputs ran without a finding"
finish "ok: fuzz_replay's --suffix refusals"
