#!/usr/bin/env bash
# test_files.sh: the file rules (docs/files.md) through the command line,
# one case_<name> function per CTest (files.cli_<name>):
#
#   bash tests/test_files.sh CASE CARVE EXAMPLE_ONNX MAKE_FILES_MODELS
#
# Each case asserts the exit status, the message, and that the files on disk
# are as they were: content and type (a FIFO stays a FIFO, a device a
# device). Devices are copies made with mknod in the test's folder (as
# root), never the system's; /dev/null is only checked to still be one.
set -euo pipefail

CASE=$1 CARVE=$2 EXAMPLE=$3 MAKE=$4
. "$(dirname "$0")/lib.sh"
cli_init files
RUN_TIMEOUT=60 FAIL_OUT_BYTES=2000

# What a path is: its type, and its bytes' hash for a regular file, its
# device numbers for a device (reading a FIFO would block: never read).
print_id() {
  if [ -L "$1" ]; then printf 'link->%s ' "$(readlink "$1")"; fi
  if [ ! -e "$1" ]; then echo "absent"; return; fi
  local kind
  kind=$(stat -L -c %F "$1")
  case $kind in
    "regular file"|"regular empty file") echo "$kind $(sha256sum < "$1" | cut -c1-64)" ;;
    *device*) echo "$kind $(stat -L -c %t:%T "$1")" ;;
    *) echo "$kind" ;;
  esac
}
# keep PATH...: remembers them; expect_kept checks they are unchanged.
keep() { : > "$T/kept"; for p in "$@"; do echo "$p|$(print_id "$p")" >> "$T/kept"; done; }
expect_kept() {
  while IFS='|' read -r p id; do
    [ "$(print_id "$p")" = "$id" ] || fail "$p changed: was '$id', now '$(print_id "$p")'"
  done < "$T/kept"
}
expect_no_temps() {
  local left
  left=$(find "${1:-$T}" -name '.*.carve-tmp.*' | head -n 3)
  [ -z "$left" ] || fail "temporaries left: $left"
}

setup() {
  cp "$EXAMPLE" "$T/in.onnx"
  printf 'old model' > "$T/out.onnx"
  printf 'old report' > "$T/r.json"
}

case_output_dev_null() {
  setup
  keep /dev/null "$T/in.onnx"
  run lower "$T/in.onnx" --target htp -o /dev/null
  expect_rc 1
  expect_err "/dev/null: is a character device, not a regular file: refusing to write the model there"
  expect_kept
  [ -c /dev/null ] || fail "/dev/null is no longer a character device"
  run fold "$T/in.onnx" -o /dev/null
  expect_rc 1
  expect_err "/dev/null: is a character device"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report /dev/null
  expect_rc 1
  expect_err "refusing to write the report there"
  keep "$T/out.onnx" /dev/null
  expect_kept
}

case_output_fifo_and_device() {
  setup
  mkfifo "$T/fifo"
  ln -s fifo "$T/fifolink"
  mkdir "$T/dir"
  if [ "$(id -u)" -eq 0 ]; then mknod "$T/null" c 1 3; else mkfifo "$T/null"; fi
  keep "$T/fifo" "$T/fifolink" "$T/null" "$T/dir" "$T/out.onnx" "$T/r.json"
  for victim in fifo fifolink null dir; do
    run lower "$T/in.onnx" --target htp -o "$T/$victim"
    expect_rc 1
    expect_err "$T/$victim: is a"
    expect_err "not a regular file: refusing to write the model there"
    # a refused report replaces nothing: the model written with it stays old
    run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/$victim"
    expect_rc 1
    expect_err "refusing to write the report there"
  done
  run run "$T/in.onnx" --random-inputs 1 --output-dir "$T/fifo"
  expect_rc 1
  expect_err "--output-dir $T/fifo: not a folder"
  expect_kept
  expect_no_temps
}

case_report_is_input() {
  setup
  ln -s in.onnx "$T/inlink"
  ln "$T/in.onnx" "$T/inhard"
  keep "$T/in.onnx" "$T/inlink" "$T/out.onnx"
  for r in "$T/in.onnx" "$T/inlink" "$T/inhard" "$T/./in.onnx"; do
    run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$r"
    expect_rc 1
    expect_err "$r: refusing to overwrite the input model '$T/in.onnx' with the report (the same file)"
  done
  run lower "$T/inlink" --target htp -o "$T/in.onnx"
  expect_rc 1
  expect_err "refusing to overwrite the input model '$T/inlink' with the model"
  expect_kept
  expect_no_temps
}

case_report_is_output() {
  setup
  keep "$T/in.onnx" "$T/out.onnx"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/out.onnx"
  expect_rc 1
  expect_err "$T/out.onnx: the report and the model would both be written to this file"
  run lower "$T/in.onnx" --target htp -o - --report -
  expect_rc 1
  expect_err "-: the report and the model would both be written to this file"
  # the target profile is an input too
  printf '{"schema_version":1,"name":"mine","dtypes":["float32"],"ops":{"Relu":{}}}' > "$T/p.json"
  keep "$T/in.onnx" "$T/out.onnx" "$T/p.json"
  run lower "$T/in.onnx" --target-file "$T/p.json" -o "$T/out.onnx" --report "$T/p.json"
  expect_rc 1
  expect_err "$T/p.json: refusing to overwrite the target profile '$T/p.json' with the report (the same file)"
  printf '{"schema_version":1,"name":"c","cpu_profile":"core"}' > "$T/c.json"
  keep "$T/in.onnx" "$T/out.onnx" "$T/p.json" "$T/c.json"
  run lower "$T/in.onnx" --target htp --cpu-profile "$T/c.json" -o "$T/c.json"
  expect_rc 1
  expect_err "refusing to overwrite the CPU profile '$T/c.json' with the model"
  expect_kept
  expect_no_temps
}

case_export_partitions_onto_input_or_output() {
  mkdir "$T/parts"
  cp "$EXAMPLE" "$T/parts/Delegate_0.onnx"
  keep "$T/parts/Delegate_0.onnx"
  run lower "$T/parts/Delegate_0.onnx" --target htp -o "$T/out.onnx" --export-partitions "$T/parts"
  expect_rc 1
  expect_err "refusing to overwrite the input model '$T/parts/Delegate_0.onnx' with the partition 'Delegate_0'"
  expect_kept
  [ ! -e "$T/out.onnx" ] || fail "the model was written although the partitions failed"
  cp "$EXAMPLE" "$T/in.onnx"
  printf 'old' > "$T/parts/Delegate_0.onnx"
  keep "$T/parts/Delegate_0.onnx" "$T/in.onnx"
  run lower "$T/in.onnx" --target htp -o "$T/parts/Delegate_0.onnx" --export-partitions "$T/parts"
  expect_rc 1
  expect_err "the partition 'Delegate_0' and the model would both be written to this file"
  expect_kept
  # a folder carve made for a failed export is removed again
  run lower "$T/in.onnx" --target htp -o "$T/new/x.onnx" --export-partitions "$T/newparts"
  expect_rc 1
  [ ! -e "$T/newparts" ] || fail "the partitions folder of a failed run stays"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --export-partitions "$T/in.onnx"
  expect_rc 1
  expect_err "--export-partitions $T/in.onnx: not a folder"
  expect_kept
  expect_no_temps
}

case_external_data_is_output() {
  setup
  keep "$T/in.onnx" "$T/out.onnx"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --external-data out.onnx
  expect_rc 1
  expect_err "the external data and the model would both be written to this file"
  run lower "$T/in.onnx" --target htp -o - --external-data w.bin
  expect_rc 1
  expect_err "external data 'w.bin' needs a model file beside it, not standard output"
  run fold "$T/in.onnx" -o "$T/out.onnx" --external-data in.onnx
  expect_rc 1
  expect_err "refusing to overwrite the input model '$T/in.onnx' with the external data"
  # the input model's own external data is an input too
  "$MAKE" extdata "$T/ext.onnx"
  [ -f "$T/w.bin" ] || fail "no w.bin"
  keep "$T/in.onnx" "$T/out.onnx" "$T/w.bin" "$T/ext.onnx"
  run fold "$T/ext.onnx" -o "$T/out.onnx" --external-data w.bin
  expect_rc 1
  expect_err "refusing to overwrite the input model's external data '$T/w.bin' with the external data"
  expect_kept
  expect_no_temps
}

case_report_failure_keeps_model() {
  setup
  keep "$T/in.onnx" "$T/out.onnx"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/no/such/dir/r.json"
  expect_rc 1
  expect_err "$T/no/such/dir/r.json: folder '$T/no/such/dir': No such file or directory"
  expect_kept
  expect_no_temps
  # both written together when both can be
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/r.json"
  expect_rc 0
  "$CARVE" inspect "$T/out.onnx" > /dev/null || fail "the lowered model does not load"
  grep -q '"schema_version"' "$T/r.json" || fail "the report was not written"
  expect_no_temps
}

case_stale_temporaries_removed() {
  setup
  sh -c 'exit 0' & dead=$!
  wait "$dead"
  printf 'partial' > "$T/.out.onnx.carve-tmp.$dead.0badcafe"
  printf 'partial' > "$T/.r.json.carve-tmp.$dead.12345678"
  printf 'live' > "$T/.out.onnx.carve-tmp.$$.0badcafe"   # this shell is alive
  printf 'mine' > "$T/notes.carve-tmp.$dead.0badcafe"    # not hidden: not carve's
  keep "$T/.out.onnx.carve-tmp.$$.0badcafe" "$T/notes.carve-tmp.$dead.0badcafe" "$T/in.onnx"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/r.json"
  expect_rc 0
  [ ! -e "$T/.out.onnx.carve-tmp.$dead.0badcafe" ] || fail "a dead writer's temporary stays"
  [ ! -e "$T/.r.json.carve-tmp.$dead.12345678" ] || fail "a dead writer's temporary stays"
  expect_kept
}

case_killed_write_keeps_old_files() {
  # carve killed (SIGKILL, injected by strace at a rename, so the moment is
  # exact): before the first rename every old file is whole; between the
  # renames the report (added first) is new and the model still old. The
  # temporaries a killed carve leaves are removed by the next run.
  command -v strace > /dev/null || { fail "strace is missing: run scripts/deps.sh"; return; }
  setup
  keep "$T/out.onnx" "$T/r.json" "$T/in.onnx"
  kill_at_rename() {
    set +e
    strace -f -o /dev/null -e trace=rename -e "inject=rename:signal=SIGKILL:when=$1" \
      "$CARVE" lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/r.json" > /dev/null 2>&1
    rc=$?
    set -e
  }
  kill_at_rename 1
  expect_rc 137
  expect_kept
  [ "$(find "$T" -name '.*.carve-tmp.*' | wc -l)" -eq 2 ] || fail "expected the killed run's 2 temporaries"
  kill_at_rename 2
  expect_rc 137
  grep -q '"schema_version"' "$T/r.json" || fail "the report renamed first is not the new one"
  [ "$(cat "$T/out.onnx")" = "old model" ] || fail "the model renamed second was replaced"
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report "$T/r.json"
  expect_rc 0
  expect_no_temps
  "$CARVE" inspect "$T/out.onnx" > /dev/null || fail "the model does not load"
}

case_report_to_stdout() {
  setup
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --report -
  expect_rc 0
  expect_out '"schema_version":2'
  expect_err "report: standard output"
  run lower "$T/in.onnx" --target htp -o - --report "$T/r.json"
  expect_rc 0
  "$CARVE" inspect "$T/out" > /dev/null 2>&1 || true
  cp "$T/out" "$T/stdout.onnx"
  "$CARVE" inspect "$T/stdout.onnx" > /dev/null || fail "the model on stdout does not load"
}

case_input_fifo_model() {
  mkfifo "$T/fifo"
  keep "$T/fifo"
  start=$SECONDS
  for cmd in inspect "lower --target htp -o $T/o.onnx" "check --target htp" "run" "fold -o $T/o.onnx"; do
    # shellcheck disable=SC2086
    run $cmd "$T/fifo"
    expect_rc 1
    expect_err "$T/fifo: not a regular file (it is a FIFO)"
  done
  [ $((SECONDS - start)) -lt 30 ] || fail "took $((SECONDS - start)) s: something blocked"
  expect_kept
}

case_input_fifo_external_data() {
  "$MAKE" extdata "$T/m.onnx"
  mv "$T/w.bin" "$T/w.real"
  mkfifo "$T/w.bin"
  keep "$T/w.bin"
  run inspect "$T/m.onnx"
  expect_rc 1
  expect_err "external data 'w.bin': not a regular file (it is a FIFO)"
  expect_kept
}

case_input_not_regular() {
  cp "$EXAMPLE" "$T/in.onnx"
  mkfifo "$T/fifo"
  keep "$T/in.onnx" "$T/fifo"
  run run "$T/in.onnx" --input "x=$T"
  expect_rc 1
  expect_err "input 'x': $T: not a regular file (it is a directory)"
  run run "$T/in.onnx" --input "x=$T/fifo"
  expect_rc 1
  expect_err "not a regular file (it is a FIFO)"
  run lower "$T/in.onnx" --target-file "$T" -o "$T/o.onnx"
  expect_rc 1
  expect_err "target profile $T: not a regular file (it is a directory)"
  run lower "$T/in.onnx" --target-file "$T/fifo" -o "$T/o.onnx"
  expect_rc 1
  expect_err "not a regular file (it is a FIFO)"
  run lower "$T/in.onnx" --target htp --backend-lib "$T/fifo" -o "$T/o.onnx"
  expect_rc 1
  expect_err "backend library $T/fifo: not a regular file (it is a FIFO)"
  run inspect /dev/zero
  expect_rc 1
  expect_err "/dev/zero: not a regular file (it is a character device)"
  expect_kept
}

case_numbers_strict() {
  cp "$EXAMPLE" "$T/in.onnx"
  keep "$T/in.onnx"
  bad() { # bad WANT_TEXT ARGS...
    local want=$1
    shift
    run "$@"
    expect_rc 2
    expect_err "$want"
  }
  bad "--dim N: '99999999999999999999' is not a size" run "$T/in.onnx" --dim N=99999999999999999999
  bad "--dim N: '-1' is not a size" run "$T/in.onnx" --dim N=-1
  bad "--dim N: '+3' is not a size" run "$T/in.onnx" --dim N=+3
  bad "--dim N: ' 3' is not a size" run "$T/in.onnx" --dim "N= 3"
  bad "--dim N: '3x' is not a size" run "$T/in.onnx" --dim N=3x
  bad "--dim N: '1099511627777' is not a size" run "$T/in.onnx" --dim N=1099511627777
  # the library's text names the model; the CLI adds its flag
  run lower "$T/in.onnx" --target htp -o "$T/out.onnx" --dim Q=3
  expect_rc 1
  expect_err "carve lower: --dim Q=3: the model has no symbolic dim named 'Q'"
  [ ! -e "$T/out.onnx" ] || fail "the model was written although --dim failed"
  bad "--repeat takes a count from 1 to 1000000000" run "$T/in.onnx" --repeat 99999999999999999999
  bad "--repeat takes a count from 1 to 1000000000" run "$T/in.onnx" --repeat 2x
  bad "--repeat takes a count from 1 to 1000000000" run "$T/in.onnx" --repeat -1
  bad "--random-inputs: '-1' is not a seed" run "$T/in.onnx" --random-inputs -1
  bad "--random-inputs: '18446744073709551616' is not a seed" run "$T/in.onnx" --random-inputs 18446744073709551616
  bad "--min-partition-nodes: '5x' is not a count" lower "$T/in.onnx" --target htp -o "$T/o.onnx" --min-partition-nodes 5x
  bad "--min-partition-nodes: ' 5' is not a count" lower "$T/in.onnx" --target htp -o "$T/o.onnx" --min-partition-nodes " 5"
  bad "--min-partition-nodes: '1000001' is not a count" lower "$T/in.onnx" --target htp -o "$T/o.onnx" --min-partition-nodes 1000001
  bad "--fold-max-bytes: '-1' is not a size in bytes" lower "$T/in.onnx" --target htp -o "$T/o.onnx" --fold-max-bytes -1
  bad "--fold-max-bytes: '1x' is not a size in bytes" fold "$T/in.onnx" -o "$T/o.onnx" --fold-max-bytes 1x
  bad "--fold-max-bytes: '99999999999999999999G' is not a size in bytes" fold "$T/in.onnx" -o "$T/o.onnx" --fold-max-bytes 99999999999999999999G
  bad "--fold-max-bytes: '17179869184G' is not a size in bytes" fold "$T/in.onnx" -o "$T/o.onnx" --fold-max-bytes 17179869184G
  bad "--atol: 'inf' is not a tolerance" check "$T/in.onnx" --target htp --atol inf
  bad "--rtol: '' is not a tolerance" check "$T/in.onnx" --target htp --rtol ""
  bad "--atol: '0x10' is not a tolerance" check "$T/in.onnx" --target htp --atol 0x10
  # the largest accepted values are accepted
  run lower "$T/in.onnx" --target htp -o "$T/o.onnx" --min-partition-nodes 1000000 --fold-max-bytes 1G
  expect_rc 0
  expect_kept
}

case_usage_errors_exit_2() {
  cp "$EXAMPLE" "$T/in.onnx"
  printf '{}' > "$T/p.json"
  for cmd in lower check; do
    run $cmd "$T/in.onnx" -o "$T/o.onnx"
    expect_rc 2
    expect_err "give --target NAME or --target-file FILE"
    run $cmd "$T/in.onnx" --target htp --target-file "$T/p.json" -o "$T/o.onnx"
    expect_rc 1
    expect_err "p.json"
  done
  run check "$T/in.onnx" --target htp -o -
  expect_rc 2
  expect_err "-o needs a file"
  [ ! -e "$T/o.onnx" ] || fail "an output was written"
}

case_run_output_dir_collision() {
  "$MAKE" collide "$T/c.onnx"
  run run "$T/c.onnx" --random-inputs 1 --output-dir "$T/dump"
  expect_rc 1
  expect_err "outputs 'a/b' and 'a_b' would both be written to $T/dump/a_b.npy: nothing was written"
  [ ! -e "$T/dump" ] || fail "the dump folder of a failed run stays"
  mkdir "$T/dump"
  printf 'old' > "$T/dump/a_b.npy"
  keep "$T/dump/a_b.npy"
  run run "$T/c.onnx" --random-inputs 1 --output-dir "$T/dump"
  expect_rc 1
  expect_kept
  expect_no_temps
}

case_run_output_dir_dumps() {
  cp "$EXAMPLE" "$T/in.onnx"
  run run "$T/in.onnx" --random-inputs 1 --output-dir "$T/dump"
  expect_rc 0
  for f in y.npy y_bf16.npy inputs/x.npy; do [ -f "$T/dump/$f" ] || fail "no $f"; done
  # an --input file is an input: a dump over it is refused
  cp "$T/dump/inputs/x.npy" "$T/x.npy"
  mkdir -p "$T/d2/inputs"
  ln "$T/x.npy" "$T/d2/inputs/x.npy"
  keep "$T/x.npy"
  run run "$T/in.onnx" --input "x=$T/x.npy" --output-dir "$T/d2"
  expect_rc 1
  expect_err "refusing to overwrite the input tensor '$T/x.npy'"
  expect_kept
  expect_no_temps
}

case_nested_if_depth() {
  # 19 nested Ifs: the lowered model (a Delegate in the innermost body)
  # nests messages deeper than carve's old limit of 64; it must load back
  "$MAKE" nested "$T/n19.onnx" 19
  run lower "$T/n19.onnx" --target htp -o "$T/l19.onnx"
  expect_rc 0
  run inspect "$T/l19.onnx"
  expect_rc 0
  expect_out "Delegate"
  run check "$T/n19.onnx" --target htp --random-inputs 1 -o "$T/c19.onnx"
  expect_rc 0
  expect_out "ok   htp"
  # 64 levels load (198 deep) but lowered would be 201: refused, nothing written
  "$MAKE" nested "$T/n64.onnx" 64
  printf 'old' > "$T/l64.onnx"
  keep "$T/l64.onnx" "$T/n64.onnx"
  run inspect "$T/n64.onnx"
  expect_rc 0
  run lower "$T/n64.onnx" --target htp -o "$T/l64.onnx"
  expect_rc 1
  expect_err "refusing to write a model carve could not read back"
  expect_err "messages nested more than 200 deep"
  run check "$T/n64.onnx" --target htp --random-inputs 1 -o "$T/l64.onnx"
  expect_rc 1
  expect_err "refusing to write a model carve could not read back"
  expect_kept
  expect_no_temps
}

case_profile_strict() {
  cp "$EXAMPLE" "$T/in.onnx"
  keep "$T/in.onnx"
  prof() { printf '%s' "$1" > "$T/p.json"; run lower "$T/in.onnx" --target-file "$T/p.json" -o "$T/o.onnx"; expect_rc 1; expect_err "$2"; }
  ok='"schema_version":1,"name":"x","dtypes":["float32"]'
  prof "{$ok,\"ops\":{\"Relu\":{}}} trailing" "trailing data after the JSON value (at byte"
  prof "{$ok,\"ops\":{\"Relu\":{}}}{}" "trailing data after the JSON value"
  prof "{$ok,\"ops\":{\"Relu\":{},\"Relu\":{\"since\":14}}}" "ops.Relu: key given twice"
  prof "{\"schema_version\":1,\"name\":\"a\\u0000b\",\"dtypes\":[\"float32\"],\"ops\":{}}" "a NUL character (\\u0000) inside a string at line 1 column 31 (after key \"name\")"
  prof "{$ok,\"ops\":{\"Rellu\":{}}}" "ops.Rellu: carve does not know this op"
  prof "{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[],\"ops\":{}}" "dtypes: empty list"
  prof "{$ok,\"ops\":{\"Relu\":{\"dtypes\":[]}}}" "ops.Relu.dtypes: empty list"
  printf '{"schema_version":1,"name":"a\0b","dtypes":["float32"],"ops":{}}' > "$T/p.json"
  run lower "$T/in.onnx" --target-file "$T/p.json" -o "$T/o.onnx"
  expect_rc 1
  expect_err "a NUL byte at line 1 column 30 (after key \"name\")"
  run lower "$T/in.onnx" --target htp --cpu-ops Rellu -o "$T/o.onnx"
  expect_rc 1
  expect_err "--cpu-ops: 'Rellu' is not an op carve knows, and no node of the model is one"
  run lower "$T/in.onnx" --target htp --cpu-nodes nope -o "$T/o.onnx"
  expect_rc 1
  expect_err "carve lower: --cpu-nodes: the model has no node named 'nope' ('carve inspect --nodes' lists them)"
  run lower "$T/in.onnx" --target htp --cpu-ops Relu,Softmax -o "$T/o.onnx"
  expect_rc 0
  # given twice, the lists add up (the fuzzer found the first one leaked)
  run lower "$T/in.onnx" --target htp --cpu-ops Relu --cpu-ops Softmax -o "$T/o.onnx" --report -
  expect_rc 0
  expect_out "op Relu is in the list of ops kept on CPU"
  expect_out "op Softmax is in the list of ops kept on CPU"
  expect_kept
}

run_case files.cli_
