#!/usr/bin/env bash
# node_sweep_checker.sh NODESWEEP NODE_DIR KNOWN...: the node sweep with
# --save, then every lowered model through onnx.checker (full_check):
# carve's lowered models are valid ONNX at the opsets and IR version they
# declare (tests/check_lowered_onnx.py, python3-onnx).
set -euo pipefail
SWEEP=$1 NODE=$2
shift 2
T=$(mktemp -d "${TMPDIR:-/tmp}/carve-sweep-XXXXXX")
trap 'rm -rf "$T"' EXIT
known=()
for k in "$@"; do known+=(--known "$k"); done
"$SWEEP" "${known[@]}" --save "$T" "$NODE" | tail -1
/usr/bin/python3 "$(dirname "$0")/check_lowered_onnx.py" "$T"
