#!/usr/bin/env bash
# test_cli.sh: tests of the carve command-line tool, one case_<name>
# function per CTest (cli.<name>):
#
#   bash tests/test_cli.sh CASE CARVE EXAMPLE_ONNX CHECK_INSPECT_JSON
#
# Each case runs carve and asserts on its exit status and on the text it
# prints: 0 success, 1 a problem with the model or the request, 2 a usage
# error.
set -euo pipefail

CASE=$1 CARVE=$2 EXAMPLE=$3 CHECK_JSON=$4
. "$(dirname "$0")/lib.sh"
cli_init cli

case_help() {
  for flag in --help -h help; do
    run "$flag"
    expect_rc 0
    expect_out "usage: carve COMMAND [OPTIONS] MODEL"
    expect_out "inspect"
    expect_out "Exit status: 0 success, 1 a problem with the model or the request, 2 a usage error."
    expect_no_err
  done
}

case_no_arguments_is_usage_error() {
  run
  expect_rc 2
  expect_err "usage: carve COMMAND"
  expect_no_out
}

case_version() {
  run --version
  expect_rc 0
  expect_out_re '^carve [0-9]+\.[0-9]+\.[0-9]+$'
  expect_no_err
}

case_unknown_command() {
  run frobnicate model.onnx
  expect_rc 2
  expect_err "carve: unknown command 'frobnicate'"
  expect_err "usage: carve COMMAND"
  expect_no_out
}

case_inspect_help() {
  run inspect --help
  expect_rc 0
  expect_out "usage: carve inspect [--nodes] [--json] MODEL"
  expect_out "--nodes"
  expect_out "--json"
  expect_no_err
}

case_inspect_usage_errors() {
  run inspect
  expect_rc 2
  expect_err "carve inspect: no model given"
  expect_err "Try 'carve inspect --help'."
  run inspect --bogus "$EXAMPLE"
  expect_rc 2
  expect_err "carve inspect: unknown option '--bogus'"
  run inspect "$EXAMPLE" "$EXAMPLE"
  expect_rc 2
  expect_err "one model at a time"
}

case_missing_file() {
  run inspect "$T/no-such-model.onnx"
  expect_rc 1
  expect_err "carve: $T/no-such-model.onnx: No such file or directory"
  expect_no_out
}

case_unreadable_paths() {
  run inspect "$T"
  expect_rc 1
  expect_err "$T: not a regular file"
  if [ "$(id -u)" -ne 0 ]; then # root reads anything
    printf 'x' > "$T/secret.onnx"
    chmod 000 "$T/secret.onnx"
    run inspect "$T/secret.onnx"
    expect_rc 1
    expect_err "Permission denied"
  fi
}

case_bad_model() {
  printf 'this is not an ONNX model\n' > "$T/text.onnx"
  run inspect "$T/text.onnx"
  expect_rc 1
  expect_err "carve: $T/text.onnx: not a valid ONNX model:"
  expect_no_out
  : > "$T/empty.onnx"
  run inspect "$T/empty.onnx"
  expect_rc 1
  expect_err "$T/empty.onnx: empty input, not an ONNX model"
  head -c 1000 "$EXAMPLE" > "$T/truncated.onnx"
  run inspect "$T/truncated.onnx"
  expect_rc 1
  expect_err "not a valid ONNX model"
  expect_err "runs past the end"
}

case_inspect_example() {
  run inspect "$EXAMPLE"
  expect_rc 0
  expect_no_err
  expect_out "ir_version: 8"
  expect_out "opsets: ai.onnx=17"
  expect_out "  x: float32[1,3,16,16]"
  expect_out "  y: float32[1,16]"
  expect_out "  y_bf16: float32[1,16]"
  expect_out "initializers: 10 (1744 bytes)"
  expect_out "nodes: 14 in 1 graph"
  local op n
  while read -r op n; do
    expect_out_re "^  $op +$n\$"
  done <<'COUNTS'
Add 2
Cast 2
Concat 1
Conv 1
Gemm 1
GlobalAveragePool 1
HardSwish 1
LayerNormalization 1
Mul 1
Relu 1
Reshape 1
Softmax 1
COUNTS
  # Ops are listed by count, then by name.
  [ "$(grep -E '^  [A-Za-z]+ +[0-9]+$' "$T/out" | head -n 2 | awk '{print $1}' | paste -sd,)" = "Add,Cast" ] ||
    fail "op counts are not sorted by count then name"
}

case_inspect_example_nodes() {
  run inspect --nodes "$EXAMPLE"
  expect_rc 0
  expect_out "node list (carve name: op(inputs) -> outputs):"
  expect_out "  conv: Conv(x, conv.w, conv.b) -> conv.out"
  expect_out "  softmax: Softmax(logits) -> y"
  expect_out "  from_bf16: Cast(y.bf16) -> y_bf16"
  [ "$(grep -cE '^  [^ ]+: [A-Za-z.]+\(.*\) -> ' "$T/out")" -eq 14 ] || fail "expected 14 node lines"
}

case_inspect_example_json() {
  run inspect --json --nodes "$EXAMPLE"
  expect_rc 0
  expect_no_err
  cp "$T/out" "$T/example.json"
  "$CHECK_JSON" "$EXAMPLE" "$T/example.json" || fail "check_inspect_json rejects the JSON"
  expect_out_re '"node_count":[[:space:]]*14,'
  expect_out_re '"Conv":[[:space:]]*1'
  expect_out_re '"Add":[[:space:]]*2'
  run inspect --json "$EXAMPLE"
  expect_rc 0
  expect_out_re '"node_count":[[:space:]]*14,'
  if grep -q '"nodes"' "$T/out"; then fail "--json without --nodes lists nodes"; fi
}

case_run_repeat() {
  # the figures a benchmark compares: three decimals when the mean is below
  # 10 ms, one from 10 ms on (a sanitizer build on a loaded machine); the
  # best and the first run take the mean's precision
  local mean='([0-9]\.[0-9]{3}|[0-9]{2,}\.[0-9])' other='[0-9]+\.([0-9]{3}|[0-9])'
  run run "$EXAMPLE" --random-inputs 1 --repeat 3
  expect_rc 0
  expect_out_re "^time per run: $mean ms mean, $other ms best over 3 runs; peak memory [0-9]+\.[0-9] MiB\$"
  run run "$EXAMPLE" --random-inputs 1 --repeat 0
  expect_rc 2
  expect_err "--repeat takes a count from 1 to 1000000000"
  # --warmup: untimed runs first; the first run's time on a line of its own
  run run "$EXAMPLE" --random-inputs 1 --repeat 2 --warmup 1
  expect_rc 0
  expect_out_re "^first run: $other ms \\(one of 1 warm-up runs, not in the time per run\\)\$"
  expect_out_re "^time per run: $mean ms mean, $other ms best over 2 runs; peak memory"
  run run "$EXAMPLE" --random-inputs 1 --warmup 1
  expect_rc 2
  expect_err "--warmup goes with --repeat"
  run run "$EXAMPLE" --random-inputs 1 --repeat 2 --warmup x
  expect_rc 2
  expect_err "--warmup takes a count from 0 to 1000000"
}

case_cpu_nodes_file() {
  # --cpu-nodes @FILE: the names one a line (as a comma list would give them)
  printf 'conv\nrelu\n' >"$T/names.txt"
  run lower "$EXAMPLE" --target htp -o "$T/a.onnx" --report "$T/a.json" --cpu-nodes @"$T/names.txt"
  expect_rc 0
  run lower "$EXAMPLE" --target htp -o "$T/b.onnx" --report "$T/b.json" --cpu-nodes conv,relu
  expect_rc 0
  cmp -s "$T/a.onnx" "$T/b.onnx" || fail "@FILE and the comma list lower differently"
  grep -q '"name":"relu","op":"Relu","placement":"cpu"' "$T/a.json" || fail "relu is not on CPU in the report"
  # an unreadable list is a usage error, and nothing is written
  run lower "$EXAMPLE" --target htp -o "$T/c.onnx" --cpu-nodes @"$T/missing.txt"
  expect_rc 2
  expect_err "--cpu-nodes: cannot read '$T/missing.txt'"
  [ ! -e "$T/c.onnx" ] || fail "an output was written"
}

case_threads() {
  run run "$EXAMPLE" --random-inputs 1 --threads 2 --output-dir "$T/t2"
  expect_rc 0
  run run "$EXAMPLE" --random-inputs 1 --output-dir "$T/t1"
  expect_rc 0
  cmp -s "$T/t1/y.npy" "$T/t2/y.npy" || fail "--threads 2 changed the output"
  for bad in 0 257 x ""; do
    run lower "$EXAMPLE" --target htp -o "$T/d.onnx" --threads "$bad"
    expect_rc 2
    expect_err "--threads takes a count from 1 to 256"
  done
  [ ! -e "$T/d.onnx" ] || fail "an output was written"
}

case_run_dump_values() {
  # every value of the run, by file, with an index; the outputs equal --output-dir's
  run run "$EXAMPLE" --random-inputs 1 --dump-values "$T/d" --output-dir "$T/o"
  expect_rc 0
  [ "$(jq '.values | length' "$T/d/index.json")" -ge 14 ] || fail "index.json lists fewer than the 14 node outputs + input"
  [ "$(jq -r '.values[] | select(.input) | .name' "$T/d/index.json")" = x ] || fail "the input x is marked input"
  for f in $(jq -r '.values[].file' "$T/d/index.json"); do [ -f "$T/d/$f" ] || fail "missing $f"; done
  cmp -s "$T/d/$(jq -r '.values[] | select(.name == "y") | .file' "$T/d/index.json")" "$T/o/y.npy" || fail "y differs from --output-dir's"
  # names that clash once made file-safe get distinct files
  /usr/bin/python3 - "$T/clash.onnx" <<'PY'
import sys
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a/b", "a_b", "a:b")]
nodes = [helper.make_node("Relu", ["x"], ["a/b"]), helper.make_node("Neg", ["a/b"], ["a_b"]),
         helper.make_node("Abs", ["a_b"], ["a:b"])]
m = helper.make_model(helper.make_graph(nodes, "g", [x], outs), opset_imports=[helper.make_opsetid("", 13)])
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
  run run "$T/clash.onnx" --random-inputs 1 --dump-values "$T/c"
  expect_rc 0
  [ "$(jq -r '[.values[].file] | unique | length' "$T/c/index.json")" = 4 ] || fail "4 values need 4 distinct files"
  [ "$(jq -r '.values[] | select(.name == "a:b") | .file' "$T/c/index.json")" = "a_b~3.npy" ] || fail "a:b is a_b~3.npy"
  run run "$EXAMPLE" --dump-values
  expect_rc 2
  expect_err "--dump-values takes a folder"
}

run_case cli.
