# lib.sh: what the shell tests of the carve tool share; sourced, never run:
#
#   . "$(dirname "$0")/lib.sh"     (from tests/; ../lib.sh one folder down)
#   cli_init NAME                  after CARVE is set
#
# cli_init makes the scratch folder $T (removed on exit) and the failure
# count. Then:
#   run ARGS...        runs "$CARVE" ARGS, printing the command (named
#                      $RUN_NAME, default carve); sets $rc, stdout in
#                      $T/out, stderr in $T/err. With RUN_TIMEOUT set,
#                      under `timeout $RUN_TIMEOUT`.
#   fail MESSAGE       counts a failure and shows stdout (its first
#                      $FAIL_OUT_BYTES bytes when set) and stderr.
#   expect_rc N, expect_out TEXT, expect_err TEXT (fixed strings, so names
#   with dots or brackets need no escaping), expect_out_re REGEX,
#   expect_no_out, expect_no_err, expect_file FILE TEXT, expect_no_file FILE.
#   refused TEXT ARGS...  runs ARGS and expects a usage error: exit status
#                      2, TEXT on stderr, nothing on stdout.
#   run_case LABEL     runs case_$CASE and ends the script: "LABEL$CASE: ok"
#                      (exit 0) or "LABEL$CASE: N check(s) failed" (exit 1).
#   finish TEXT        ends a script without cases: TEXT (exit 0) or the
#                      failure count (exit 1).
# Scripts that count checks themselves (running carve their own way) use
#   ok / fail_only MESSAGE (counts a failure, prints only the message), then
#   finish_counts      "N passed, M failed"; the exit status 1 when M > 0.
# Exit statuses of carve, as everywhere in the CLI: 0 success, 1 a problem
# with the model or the request, 2 a usage error.

cli_init() {
  T=$(mktemp -d "${TMPDIR:-/tmp}/carve-$1-XXXXXX")
  trap 'rm -rf "$T"' EXIT
  failures=0
  passes=0
}

run() {
  printf '$ %s %s\n' "${RUN_NAME:-carve}" "$*"
  local pre=()
  [ -z "${RUN_TIMEOUT:-}" ] || pre=(timeout "$RUN_TIMEOUT")
  # `if` keeps set -e from ending the script on carve's own failure
  if "${pre[@]}" "$CARVE" "$@" >"$T/out" 2>"$T/err"; then rc=0; else rc=$?; fi
}

fail() {
  echo "FAIL: $*"
  echo "--- stdout"
  if [ -n "${FAIL_OUT_BYTES:-}" ]; then head -c "$FAIL_OUT_BYTES" "$T/out"; else cat "$T/out"; fi
  echo "--- stderr"; cat "$T/err"; echo "---"
  failures=$((failures + 1))
}

ok() { passes=$((passes + 1)); }
fail_only() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

expect_rc() { [ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1"; }
expect_out() { grep -qF -- "$1" "$T/out" || fail "stdout lacks: $1"; }
expect_err() { grep -qF -- "$1" "$T/err" || fail "stderr lacks: $1"; }
expect_out_re() { grep -qE -- "$1" "$T/out" || fail "no stdout line matches: $1"; }
expect_no_out() { [ ! -s "$T/out" ] || fail "stdout should be empty"; }
expect_no_err() { [ ! -s "$T/err" ] || fail "stderr should be empty"; }
expect_file() { grep -qF -- "$2" "$1" || fail "$1 lacks: $2"; }
expect_no_file() { [ ! -e "$1" ] || fail "$1 should not exist"; }
refused() {
  local want=$1
  shift
  run "$@"
  expect_rc 2
  expect_err "$want"
  expect_no_out
}

run_case() {
  declare -F "case_$CASE" >/dev/null || { echo "FAIL: no case '$CASE' in $0"; exit 1; }
  "case_$CASE"
  if [ "$failures" -ne 0 ]; then
    echo "$1$CASE: $failures check(s) failed"
    exit 1
  fi
  echo "$1$CASE: ok"
  exit 0
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "$1"
  exit 0
}

finish_counts() {
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}

# model_missing NAME FILE: true, with a FAIL line naming the fetch script,
# when a real model's file is not there (the caller counts it and goes on)
model_missing() {
  [ -f "$2" ] && return 1
  echo "FAIL $1: $2 is missing (run scripts/fetch-models.sh)"
}

# real_models SET: the models of tests/data/real_models.list in SET (light
# or heavy), one "name|path below the model cache|arguments" line each, the
# arguments' $DATA, $P, $VAD, $DET_SIDE and $REC_WIDTH replaced (the caller
# sets DET_SIDE and REC_WIDTH, the OCR input sizes it runs).
real_models() {
  local here data P vad name set rel args
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  data=$here/data
  P=p2o.DynamicDimension
  vad="--input sr=$data/sr16000.npy --input input=$data/audio_1x512.npy --input state=$data/state_2x1x128.npy"
  while IFS='|' read -r name set rel args; do
    case $name in '' | '#'*) continue ;; esac
    [ "$set" = "$1" ] || continue
    args=${args//'$VAD'/$vad}
    args=${args//'$DATA'/$data}
    args=${args//'$DET_SIDE'/${DET_SIDE:?}}
    args=${args//'$REC_WIDTH'/${REC_WIDTH:?}}
    args=${args//'$P'/$P}
    printf '%s|%s|%s\n' "$name" "$rel" "$args"
  done <"$here/data/real_models.list"
}

# real_model_tolerance NAME: "atol rtol" within which a run of the model
# matches onnxruntime's (tests/ort_real_models.sh, tests/ort_partitions.sh):
# float32 models 1e-4 1e-3.
real_model_tolerance() {
  case $1 in
    silero_vad_half | imgly_medium) echo "1e-2 1e-2" ;; # float16
    oww_melspectrogram) echo "1e-3 1e-3" ;;
    # imgly_small is dynamically quantized (DynamicQuantizeLinear + ConvInteger
    # downstream of its 39 bilinear Resize nodes): a last-bit difference in a
    # Resize output can move a value to the next quantization step, so it
    # matches only because carve's bilinear Resize rounds as onnxruntime does
    # (k_resize.c, docs/kernels.md). Every activation is then bit-identical; the
    # sigmoid outputs differ by <= 2e-7 (onnxruntime approximates the logistic
    # function), well inside the float32 tolerance.
    *) echo "1e-4 1e-3" ;;
  esac
}
