#!/usr/bin/env bash
# deps.sh: installs what carve's build, tests and fuzzer need on Debian 12:
# Debian packages, then the test-only npm packages of tests/ort and tests/browser.
# Idempotent: installs only what is missing, and refreshes the package lists
# only when they are missing, stale, or an install fails without a refresh.
# Run as root (or with sudo available).
set -euo pipefail

# Debian packages, by what needs them.
PKGS=(
  # build
  cmake make gcc libc6-dev pkg-config
  libprotobuf-c-dev protobuf-c-compiler   # protobuf-c runtime and protoc-c
  libonnx-dev                             # onnx.proto, compiled with protoc-c
  libcjson-dev libopenblas-dev
  libdnnl-dev                             # the onednn backend (optional at build time: CARVE_ONEDNN)
  # fuzzer: clang and its runtimes (libFuzzer, ASan, UBSan). The runtimes are
  # only a Recommends of clang, so they are named here.
  clang libclang-rt-14-dev
  # tests: the ONNX backend test models (over 1000 model.onnx files)
  libonnx-testdata
  strace                                  # tests/test_files.sh: kill carve at a rename (fault injection)
  python3-onnx                            # onnx.checker on the node sweep's lowered models; test models of newer opsets
  locales                                 # de_DE's source: threads.comma_locale builds a decimal-comma locale
  python3-torch                           # passes.recompose_torch exports torch's LayerNorm/GELU/Hardswish forms
  # scripts/fetch-models.sh: `npm pack` and a JSON reader
  ca-certificates
  # tests/browser: the partition map in a real browser (headless)
  chromium
  # tests/ort_partitions.sh: ONNX's own checker on exported partitions (python3-onnx above), jq
  jq
)
# node and npm are wanted as commands: any install that provides them will do
# (a nodejs package from another source may bundle npm and conflict with
# Debian's npm package).
command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Test-only npm packages: tests/ort (onnxruntime-node, the reference the
# kernel tests compare carve with), pinned by its package-lock.json.
npm_test_packages() {
  local dir=$ROOT/tests/ort
  [ -f "$dir/package-lock.json" ] || return 0
  if (cd "$dir" && npm ls --depth=0 >/dev/null 2>&1); then
    echo "deps: tests/ort npm packages present"
  else
    echo "deps: installing tests/ort npm packages (npm ci)"
    (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
  fi
  # tests/browser: puppeteer-core drives Debian's chromium; it never
  # downloads a browser
  dir=$ROOT/tests/browser
  [ -f "$dir/package-lock.json" ] || return 0
  if (cd "$dir" && npm ls --depth=0 >/dev/null 2>&1); then
    echo "deps: tests/browser npm packages present"
  else
    echo "deps: installing tests/browser npm packages (npm ci)"
    (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
  fi
}

missing=()
for p in "${PKGS[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PKGS[@]} Debian packages present"
  npm_test_packages
  exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive

# Package lists are "stale" when there are none or they are over a day old.
lists_fresh() {
  local newest
  newest=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit 2>/dev/null)
  [ -n "$newest" ]
}

echo "deps: installing ${missing[*]}"
updated=no
if ! lists_fresh; then
  $SUDO apt-get update
  updated=yes
fi
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  [ "$updated" = yes ] && exit 1
  echo "deps: install failed, refreshing package lists and retrying" >&2
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
npm_test_packages
echo "deps: done"
