#!/usr/bin/env bash
# bench_models_smoke.sh BUILD_DIR: bench/bench_models.sh runs (one run of
# each runtime; silero 200) and prints, for each of its three models, carve's
# and onnxruntime's time per run and peak memory, and a ratio that is
# carve's mean over onnxruntime's, to the printed rounding. A bad RUNS and a
# folder without carve are exit 2 with a message and nothing printed. The
# figures are not judged. It needs the real models
# (scripts/fetch-models.sh) and onnxruntime-node (tests/ort).
set -uo pipefail
BUILD=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRIPT=$HERE/../bench/bench_models.sh
fail() {
  echo "FAIL: $*"
  exit 1
}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# refused WANT ARGS...: exit 2, WANT on stderr, nothing on stdout
refused() {
  local want=$1 rc
  shift
  "$SCRIPT" "$@" >"$t/out" 2>"$t/err"
  rc=$?
  [ $rc = 2 ] || fail "bench_models.sh $*: exit $rc, not 2"
  grep -qF -- "$want" "$t/err" || fail "bench_models.sh $*: no '$want' in: $(cat "$t/err")"
  [ ! -s "$t/out" ] || fail "bench_models.sh $* printed: $(head -3 "$t/out")"
  echo "ok: $* -> $(cat "$t/err")"
}
refused "RUNS takes 1 to 99, not '100'" "$BUILD" 100
refused "RUNS takes 1 to 99, not 'x'" "$BUILD" x
refused "no carve binary in '$t'" "$t" 1

"$SCRIPT" "$BUILD" 1 >"$t/out" 2>"$t/err" || fail "bench_models.sh $BUILD 1: exit $?: $(cat "$t/err")"
cat "$t/out"
# time per run: M ms mean, B ms best over N runs; peak memory P MiB
re='time per run: ([0-9.]+) ms mean, [0-9.]+ ms best over ([0-9]+) runs; peak memory [0-9.]+ MiB'
for name in "OCR det 1x3x640x640" "OCR rec 1x3x48x320" "silero VAD 512 samples"; do
  block=$(grep -A3 "^$name\$" "$t/out") || fail "no block for $name"
  c=$(sed -nE "s/^  carve: +$re.*/\1 \2/p" <<<"$block")
  o=$(sed -nE "s/^  onnxruntime: +$re.*/\1 \2/p" <<<"$block")
  r=$(sed -nE 's/^  ratio carve\/onnxruntime: ([0-9.]+)$/\1/p' <<<"$block")
  [ -n "$c" ] && [ -n "$o" ] && [ -n "$r" ] || fail "$name: a line is missing or malformed: $block"
  read -r cm cn <<<"$c"
  read -r om on <<<"$o"
  want=1
  [ "$name" = "silero VAD 512 samples" ] && want=200
  [ "$cn" = $want ] && [ "$on" = $want ] || fail "$name: $cn and $on runs, not $want"
  awk -v c="$cm" -v o="$om" -v r="$r" 'BEGIN { d = r - c / o; exit !(c > 0 && o > 0 && d <= 0.01 && d >= -0.01) }' ||
    fail "$name: ratio $r is not $cm/$om"
  echo "ok: $name: $cm against $om ms, ratio $r"
done
