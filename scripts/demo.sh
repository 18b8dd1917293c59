#!/usr/bin/env bash
# demo.sh: on a fresh Debian 12 machine, as root, from the source tree:
# installs what carve needs, builds it in build/ and runs carve on the
# bundled example model (build/example.onnx, made by the build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
./build/carve inspect build/example.onnx
