#!/bin/sh
# perf_start.sh CARVE: a carve process loads no backend library before its
# first use: libdnnl (40 MB of C++, with libstdc++) cost every command about
# 2 ms of CPU before main (docs/performance.md). Checked on the dynamic
# section (NEEDED) and on what the loader actually maps for `carve --version`
# and for a lowering that uses no oneDNN; then the oneDNN backend, asked for,
# still loads it (when built in).
set -eu
CARVE=$1
fail() { echo "FAIL: $*"; exit 1; }
needed=$(readelf -d "$CARVE" | grep NEEDED || true)
echo "$needed"
echo "$needed" | grep -q 'libdnnl' && fail "carve is linked to libdnnl (NEEDED): a dnnl_ function missing from src/backends/onednn/dn_api.h?"
echo "$needed" | grep -q 'libstdc++' && fail "carve is linked to libstdc++"
loaded=$(LD_DEBUG=libs "$CARVE" --version 2>&1 | grep 'calling init' || true)
echo "$loaded" | grep -q 'libdnnl' && fail "carve --version initializes libdnnl"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$(dirname "$CARVE")/example.onnx" "$dir/m.onnx"
loaded=$(LD_DEBUG=libs "$CARVE" lower "$dir/m.onnx" --target htp -o "$dir/o.onnx" 2>&1 | grep 'calling init' || true)
echo "$loaded" | grep -q 'libdnnl' && fail "a lowering for htp loads libdnnl"
if "$CARVE" targets 2>/dev/null | grep -q "^onednn"; then
  LD_DEBUG=libs "$CARVE" targets 2>&1 | grep 'calling init' | grep -q 'libdnnl' ||
    fail "carve targets (which asks the onednn backend if it is available) did not load libdnnl"
fi
echo "ok"
