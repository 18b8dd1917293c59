#!/usr/bin/env bash
# lower_vs_ort_smoke.sh BUILD_DIR: bench/lower_vs_ort.sh runs (one run of
# each side) and prints what it says it prints: a row for each real model
# with seven figures, where the ratios are carve over onnxruntime and +start
# is the floor plus the process start of the header, to the rounding of the
# printed figures. Refusals: a bad RUNS and a folder without carve are exit
# 2 with a message, before any work; a carve that fails stops the script
# with a message naming the command. The figures are not judged. It needs
# the real models (scripts/fetch-models.sh) and onnxruntime-node (tests/ort).
set -uo pipefail
BUILD=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
CARVE=$HERE/../bench/lower_vs_ort.sh RUN_NAME=bench/lower_vs_ort.sh
cli_init lower-vs-ort

refused "RUNS takes 1 to 99, not '0'" "$BUILD" 0
refused "RUNS takes 1 to 99, not '5x'" "$BUILD" 5x
refused "no carve binary in '$T'" "$T" 1

# a carve whose lowering fails: the script stops and names the command
mkdir "$T/broken"
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "carve 0"; exit 0; }\necho "no" >&2\nexit 1\n' >"$T/broken/carve"
chmod +x "$T/broken/carve"
run "$T/broken" 1
[ "$rc" != 0 ] || fail "a failing carve: the script exited 0"
expect_err "lower_vs_ort.sh: failed: $T/broken/carve lower "
grep -q '^OCR' "$T/out" && fail "a failing carve: a row was printed"

# one real run
run "$BUILD" 1
expect_rc 0
cat "$T/out"
start=$(sed -nE 's/^\+start: the floor plus carve.s process start \(([0-9.]+) ms.*/\1/p' "$T/out")
[ -n "$start" ] || fail "no process start in the header"
rows=0
for name in "OCR det" "OCR rec" "OCR cls" "silero VAD v5" "imgly small" "imgly medium"; do
  line=$(grep "^$name" "$T/out") || { fail_only "no row for $name"; continue; }
  if [[ $line == *missing* ]]; then
    echo "$name: missing here (heavy models not fetched)"
    continue
  fi
  # the seven figures after the name, and their relations
  figs=${line:23} # after the name's column (printf '%-22s ')
  figs=${figs%%   carve:*}
  bad=$(awk -v s="${start:-0}" '{
    if (NF != 7) { print NF " figures, not 7: " $0; exit }
    for (i = 1; i <= 7; i++) if ($i !~ /^[0-9]+(\.[0-9]+)?$/ || $i + 0 <= 0) { print "figure " i " is " $i; exit }
    # carve ort ratio floor +start ort-1st ratio-to-1st
    if ((d = $3 - $1 / $2) > 0.01 || d < -0.01) { print "ratio " $3 " is not " $1 "/" $2; exit }
    if ((d = $5 - ($4 + s)) > 0.051 || d < -0.051) { print "+start " $5 " is not " $4 " + " s; exit }
    if ((d = $7 - $1 / $6) > 0.01 || d < -0.01) { print "ratio " $7 " is not " $1 "/" $6; exit }
  }' <<<"$figs")
  if [ -n "$bad" ]; then fail_only "$name: $bad"; else rows=$((rows + 1)); fi
done
[ $rows -ge 4 ] || fail_only "only $rows models were measured"
finish "ok: the refusals, and $rows models measured (process start $start ms)"
