#!/usr/bin/env bash
# multi_target_cli.sh: several targets on the command line. `lower --target
# htp+gpu` is one lowering in priority order; `lower --target htp,gpu` is a
# usage error with a hint (exit 2, nothing written); `check --target
# htp+gpu,gpu` checks the joint lowering and gpu alone; --skip-on moves a
# node to the next target; --target-file profiles follow the names.
#   multi_target_cli.sh CARVE EXAMPLE_MODEL
set -uo pipefail
CARVE=$1
EXAMPLE=$2
. "$(dirname "$0")/../lib.sh"
cli_init multi-target

# a comma in lower's --target
"$CARVE" lower "$EXAMPLE" --target htp,gpu -o "$T/o.onnx" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && ok || fail_only "lower --target htp,gpu exits $rc, not 2"
grep -q "give several targets with '+'" "$T/err" && ok || fail_only "no hint about '+': $(cat "$T/err")"
[ ! -e "$T/o.onnx" ] && ok || fail_only "lower --target htp,gpu wrote a model"

# the joint lowering: report lists both targets, summary names them
"$CARVE" lower "$EXAMPLE" --target htp+gpu -o "$T/o.onnx" --report "$T/r.json" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && ok || fail_only "lower --target htp+gpu exits $rc: $(cat "$T/err")"
grep -q '"targets":\[{"name":"htp"' "$T/r.json" && grep -q '{"name":"gpu"' "$T/r.json" && ok ||
  fail_only "the report does not list htp then gpu"
grep -q '^target htp+gpu: ' "$T/err" && grep -q '^  gpu: ' "$T/err" && ok || fail_only "summary: $(cat "$T/err")"
# bfloat16 nodes: neither htp nor gpu takes them, both say why
grep -q '"refused_by":\[{"target":"htp","code":"unsupported_dtype"' "$T/r.json" && ok ||
  fail_only "the report does not give htp's reason for a node on CPU"

# check: a joint lowering and one target alone, one run of the original
"$CARVE" check "$EXAMPLE" --target htp+gpu,gpu >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && ok || fail_only "check --target htp+gpu,gpu exits $rc: $(cat "$T/err")"
grep -q '^ok   htp+gpu y:' "$T/out" && grep -q '^ok   gpu y:' "$T/out" && ok || fail_only "check output: $(cat "$T/out")"

# --skip-on: the first Conv goes to gpu instead of htp
conv=$("$CARVE" inspect --nodes "$EXAMPLE" | sed -nE 's/^  ([^:]+): Conv\(.*/\1/p' | head -1)
[ -n "$conv" ] && ok || fail_only "no Conv in the example"
"$CARVE" lower "$EXAMPLE" --target htp+gpu --skip-on "htp:$conv" -o "$T/o2.onnx" --report "$T/r2.json" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && ok || fail_only "--skip-on htp:$conv exits $rc: $(cat "$T/err")"
grep -q "\"name\":\"$conv\",\"op\":\"Conv\",\"placement\":[0-9]*,\"target\":\"gpu\",\"refused_by\":\[{\"target\":\"htp\",\"code\":\"skipped_by_user\"" "$T/r2.json" && ok ||
  fail_only "the skipped Conv is not on gpu with htp's skipped_by_user"
"$CARVE" check "$EXAMPLE" --target htp+gpu --skip-on "htp:$conv" >"$T/out" 2>&1 && ok || fail_only "check with --skip-on: $(cat "$T/out")"

# bad --skip-on values
"$CARVE" lower "$EXAMPLE" --target htp+gpu --skip-on "nocolon" -o "$T/o3.onnx" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "is not TARGET:NODE" "$T/err" && ok || fail_only "--skip-on nocolon: rc $rc, $(cat "$T/err")"
"$CARVE" lower "$EXAMPLE" --target htp+gpu --skip-on "lpai:$conv" -o "$T/o3.onnx" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "'lpai' is not one of the targets" "$T/err" && ok || fail_only "--skip-on lpai: rc $rc, $(cat "$T/err")"
[ ! -e "$T/o3.onnx" ] && ok || fail_only "a refused --skip-on wrote a model"

# a target twice
"$CARVE" lower "$EXAMPLE" --target htp+htp -o "$T/o3.onnx" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "target htp is named twice" "$T/err" && ok || fail_only "htp+htp: rc $rc, $(cat "$T/err")"

# --target-file joins after the names: gpu's profile renamed, after htp
sed 's/"name": "gpu"/"name": "mygpu"/' "$(dirname "$0")/../../targets/gpu.json" >"$T/mygpu.json"
"$CARVE" lower "$EXAMPLE" --target htp --target-file "$T/mygpu.json" -o "$T/o4.onnx" --report "$T/r4.json" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q '^target htp+mygpu: ' "$T/err" && ok || fail_only "--target htp --target-file: rc $rc, $(cat "$T/err")"

finish_counts
