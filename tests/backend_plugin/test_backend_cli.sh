#!/usr/bin/env bash
# test_backend_cli.sh: the command-line tool with backends, one case_<name>
# function per CTest (backend_cli.<name>):
#
#   bash test_backend_cli.sh CASE CARVE DEMO_SO NO_ENTRY_SO BAD_ABI_SO UNAVAILABLE_SO
#
# The model is the bundled example (built beside the carve tool).
set -euo pipefail

CASE=$1 CARVE=$2 DEMO=$3 NO_ENTRY=$4 BAD_ABI=$5 UNAVAILABLE=$6
EXAMPLE=$(dirname "$CARVE")/example.onnx
. "$(dirname "$0")/../lib.sh"
cli_init backend-cli

case_lower_run_check_through_plugin() {
  run lower "$EXAMPLE" --backend-lib "$DEMO" --target demo -o "$T/low.onnx"
  expect_rc 0
  expect_err "target demo: 8 of 28 nodes delegated in 6 partitions"
  # the Delegates record their backend: without the plugin they cannot run
  run run "$T/low.onnx" --random-inputs 1
  expect_rc 1
  expect_err "carve run: Delegate 'Delegate_0': its backend 'demo' is not registered on this context; 'carve targets' lists the backends, --backend-lib FILE loads a plugin, --reference runs the body on the reference kernels"
  run run "$T/low.onnx" --random-inputs 1 --reference
  expect_rc 0
  cp "$T/out" "$T/ref_out"
  run run "$T/low.onnx" --random-inputs 1 --backend-lib "$DEMO" --repeat 3
  expect_rc 0
  grep -v '^time per run' "$T/out" >"$T/demo_out"
  # the demo computes Relu, Add and Mul exactly as the reference kernels do
  cmp -s "$T/ref_out" "$T/demo_out" || fail "the demo backend's outputs differ from the reference run's"
  run check "$EXAMPLE" --backend-lib "$DEMO" --target demo
  expect_rc 0
  expect_out "ok   demo y: float32, 16 elements"
  run check "$EXAMPLE" --backend-lib "$DEMO" --target demo --reference
  expect_rc 0
  expect_out "ok   demo y_bf16"
}

case_loader_errors() {
  run lower "$EXAMPLE" --backend-lib "$T/nope.so" --target demo -o "$T/a.onnx"
  expect_rc 1
  expect_err "carve lower: backend library $T/nope.so: cannot be loaded: $T/nope.so: cannot open shared object file"
  expect_no_file "$T/a.onnx"
  echo "not a library" >"$T/text.so"
  run run "$EXAMPLE" --random-inputs 1 --backend-lib "$T/text.so"
  expect_rc 1
  expect_err "carve run: backend library $T/text.so: cannot be loaded:"
  run check "$EXAMPLE" --backend-lib "$NO_ENTRY" --target htp
  expect_rc 1
  expect_err "backend library $NO_ENTRY: no symbol 'carve_backend_entry' (a carve backend exports const carve_backend *carve_backend_entry(void))"
  run lower "$EXAMPLE" --backend-lib "$BAD_ABI" --target htp -o "$T/a.onnx"
  expect_rc 1
  expect_err "backend library $BAD_ABI: its ABI version is 42, this carve needs 1 (rebuild it against this carve's carve_backend.h)"
  expect_no_file "$T/a.onnx"
  run targets --backend-lib "$UNAVAILABLE"
  expect_rc 1
  expect_err "backend library $UNAVAILABLE: backend 'bad' is not available: no demo accelerator found on this machine"
  run lower "$EXAMPLE" --target demo -o "$T/a.onnx"
  expect_rc 1
  expect_err "no built-in target 'demo'"
  run lower "$EXAMPLE" --target htp -o "$T/a.onnx" --backend-lib
  expect_rc 2
  expect_err "--backend-lib takes the path of a backend's shared object"
  run lower "$EXAMPLE" --backend-lib "$DEMO" --backend-lib "$DEMO" --target demo -o "$T/a.onnx"
  expect_rc 1
  expect_err "backend library $DEMO: a backend named 'demo' is already registered"
}

case_targets_lists_backends() {
  run targets
  expect_rc 0
  expect_out "backends:"
  expect_out "  reference (carve "
  expect_out "htp: Modelled on"
  expect_out "  backend: reference"
  run targets --backend-lib "$DEMO"
  expect_rc 0
  expect_out "  demo (demo 1.0): available; brings its own profile"
}

run_case backend_cli.
