#!/usr/bin/env bash
# demo.sh: on a fresh Debian 12 machine, as root, from the source tree:
# installs what carve needs, builds it in build/ and lowers the bundled
# example model (build/example.onnx, made by the build) for the htp target,
# then checks the lowered model against the original.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
./build/carve lower build/example.onnx --target htp -o build/example.htp.onnx --report build/example.htp.json
./build/carve check build/example.onnx --target htp
