#!/usr/bin/env bash
# fold_cli.sh: `carve fold` and the folding options of `carve lower`:
#
#   bash tests/passes/fold_cli.sh CARVE EXAMPLE_ONNX
#
# Exit statuses as everywhere in the CLI: 0 success, 1 a problem with the
# model or the request, 2 a usage error.
set -euo pipefail

CARVE=$1 EXAMPLE=$2
. "$(dirname "$0")/../lib.sh"
cli_init fold-cli

run --help
expect_rc 0
expect_out "fold "

run fold --help
expect_rc 0
expect_out "usage: carve fold MODEL -o OUT.onnx"
expect_out "--fold-max-bytes N"

run fold "$EXAMPLE"
expect_rc 2
expect_err "no output given"

run fold "$EXAMPLE" -o "$T/f.onnx" --fold-max-bytes 1x
expect_rc 2
expect_err "--fold-max-bytes: '1x' is not a size in bytes"

run fold "$T/absent.onnx" -o "$T/f.onnx"
expect_rc 1

run fold "$EXAMPLE" -o "$T/f.onnx" --fold-max-bytes 64k
expect_rc 0
expect_err "folded: "
expect_err "folded model: $T/f.onnx"

run inspect "$T/f.onnx"
expect_rc 0
expect_out "nodes: "

run run "$T/f.onnx" --random-inputs 1
expect_rc 0

run lower --help
expect_rc 0
expect_out "--no-fold"
expect_out "--fold-max-bytes N"

run lower "$EXAMPLE" --target htp -o "$T/l.onnx" --report "$T/r.json"
expect_rc 0
expect_err "folding: "
expect_file "$T/r.json" '"folding":{"enabled":true'

run lower "$EXAMPLE" --target htp -o "$T/l2.onnx" --report "$T/r2.json" --no-fold
expect_rc 0
expect_file "$T/r2.json" '"folding":{"enabled":false}'

run check "$EXAMPLE" --target htp --fold-max-bytes 1M
expect_rc 0

run lower "$EXAMPLE" --target htp -o "$T/l3.onnx" --fold-max-bytes
expect_rc 2
expect_err "--fold-max-bytes takes a size in bytes"

finish "all fold CLI checks passed"
