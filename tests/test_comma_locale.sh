#!/usr/bin/env bash
# test_comma_locale.sh TEST_THREADS NODE_DIR: builds a German locale (decimal
# comma) into a temporary LOCPATH with localedef (libc-bin, from the
# de_DE source glibc ships), then runs test_threads in it: reports and Cast
# to/from strings keep the "." whatever the host program's locale.
set -euo pipefail
T=$(mktemp -d "${TMPDIR:-/tmp}/carve-locale-XXXXXX")
trap 'rm -rf "$T"' EXIT
localedef -i de_DE -f ISO-8859-1 "$T/de_DE.ISO-8859-1" 2>/dev/null || [ -d "$T/de_DE.ISO-8859-1" ] ||
  { echo "FAIL: localedef could not build de_DE.ISO-8859-1"; exit 1; }
LOCPATH=$T OPENBLAS_NUM_THREADS=1 "$1" --locale de_DE.ISO-8859-1 "$2"
