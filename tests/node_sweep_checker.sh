#!/usr/bin/env bash
# node_sweep_checker.sh NODESWEEP NODE_DIR KNOWN...: the node sweep with
# --save, then every lowered model through onnx.checker (full_check):
# carve's lowered models are valid ONNX at the opsets and IR version they
# declare (tests/check_lowered_onnx.py, python3-onnx), lowered without the
# opset upgrade so that the checker of onnx 1.12 knows their opsets.
set -euo pipefail
SWEEP=$1 NODE=$2
shift 2
T=$(mktemp -d "${TMPDIR:-/tmp}/carve-sweep-XXXXXX")
trap 'rm -rf "$T"' EXIT
known=()
for k in "$@"; do known+=(--known "$k"); done
# without the opset upgrade: onnx 1.12's checker knows opsets up to 17 and
# IR up to 8, and the upgrade brings every model to opset 21 (IR 10)
"$SWEEP" --no-upgrade "${known[@]}" --save "$T" "$NODE" | tail -1
/usr/bin/python3 "$(dirname "$0")/check_lowered_onnx.py" "$T"
