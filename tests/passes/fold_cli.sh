#!/usr/bin/env bash
# fold_cli.sh: `carve fold` and the folding options of `carve lower`:
#
#   bash tests/passes/fold_cli.sh CARVE EXAMPLE_ONNX
#
# Exit statuses as everywhere in the CLI: 0 success, 1 a problem with the
# model or the request, 2 a usage error.
set -euo pipefail

CARVE=$1 EXAMPLE=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/carve-fold-cli-XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0

run() {
  printf '$ carve %s\n' "$*"
  set +e
  "$CARVE" "$@" >"$T/out" 2>"$T/err"
  rc=$?
  set -e
}
fail() {
  echo "FAIL: $*"
  echo "--- stdout"; cat "$T/out"; echo "--- stderr"; cat "$T/err"; echo "---"
  failures=$((failures + 1))
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1"; }
expect_out() { grep -qF -- "$1" "$T/out" || fail "stdout lacks: $1"; }
expect_err() { grep -qF -- "$1" "$T/err" || fail "stderr lacks: $1"; }
expect_file() { grep -qF -- "$2" "$1" || fail "$1 lacks: $2"; }

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

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all fold CLI checks passed"
