#!/usr/bin/env bash
# bench_onednn_smoke.sh BUILD_DIR: bench/bench_onednn.sh runs (one run of
# each runtime) and prints, for each of its three models at one and two
# threads, carve+oneDNN's and onnxruntime's time per run, a mean and a best
# ratio that are carve's over onnxruntime's, and the first runs with theirs,
# to the printed rounding. A bad RUNS and a folder without carve are exit 2
# with a message and nothing printed. The figures are not judged. It needs
# the oneDNN backend, the real models (scripts/fetch-models.sh, imgly small
# among them) and onnxruntime-node (tests/ort).
set -uo pipefail
BUILD=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
CARVE=$HERE/../bench/bench_onednn.sh RUN_NAME=bench/bench_onednn.sh
cli_init bench-onednn

refused "RUNS takes 1 to 99, not '0'" "$BUILD" 0
refused "RUNS takes 1 to 99, not '1.5'" "$BUILD" 1.5
refused "no carve binary in '$T'" "$T" 1

run "$BUILD" 1
expect_rc 0
cat "$T/out"
grep -q '^ISA: ' "$T/out" || fail_only "no ISA line"
# the figures of one block: "M B N" from "time per run: M ms mean, B ms best over N runs"
times() { sed -nE "s/^    $1: +time per run: ([0-9.]+) ms mean, ([0-9.]+) ms best over ([0-9]+) runs.*/\1 \2 \3/p"; }
# near A B C: A is B/C to two decimals
near() { awk -v r="$1" -v a="$2" -v b="$3" 'BEGIN { d = r - a / b; exit !(a > 0 && b > 0 && d <= 0.01 && d >= -0.01) }'; }
blocks=0
for name in "OCR det 1x3x640x640" "OCR rec 1x3x48x320" "imgly small"; do
  model=$(awk -v n="$name (" 'index($0, n) == 1 { on = 1; next } on && /^[^ ]/ { exit } on' "$T/out")
  [ -n "$model" ] || { fail_only "no block for $name"; continue; }
  for t in "1 thread" "2 threads"; do
    block=$(grep -A5 "^  $t\$" <<<"$model")
    read -r cm cb cn <<<"$(times 'carve\+oneDNN' <<<"$block")"
    read -r om ob on <<<"$(times 'onnxruntime' <<<"$block")"
    read -r rm rb <<<"$(sed -nE 's/^    ratio carve\/onnxruntime: ([0-9.]+) mean, ([0-9.]+) best$/\1 \2/p' <<<"$block")"
    read -r cf of rf <<<"$(sed -nE 's/^    first run: carve\+oneDNN ([0-9.]+) ms .* onnxruntime ([0-9.]+) ms .* ratio ([0-9.]+)$/\1 \2 \3/p' <<<"$block")"
    if [ -z "${cm:-}" ] || [ -z "${om:-}" ] || [ -z "${rm:-}" ] || [ -z "${cf:-}" ]; then
      fail_only "$name, $t: a line is missing or malformed: $block"
      continue
    fi
    [ "$cn" = 1 ] && [ "$on" = 1 ] || fail_only "$name, $t: $cn and $on runs, not 1"
    near "$rm" "$cm" "$om" || fail_only "$name, $t: mean ratio $rm is not $cm/$om"
    near "$rb" "$cb" "$ob" || fail_only "$name, $t: best ratio $rb is not $cb/$ob"
    near "$rf" "$cf" "$of" || fail_only "$name, $t: first-run ratio $rf is not $cf/$of"
    blocks=$((blocks + 1))
  done
done
finish "ok: the refusals, and $blocks blocks' lines and ratios"
