#!/usr/bin/env bash
# dump_after_cli.sh: `carve lower --dump-after STAGE[,STAGE] --dump-dir DIR`
# (docs/ARCHITECTURE.md, "Lowering stages"). The requested stages, and only
# they, leave DIR/NN-STAGE.txt; the dump after fold (no Delegate yet)
# differs from the one after delegates; the rounds' stages carry their
# round; --help lists the stages. Bad requests: an unknown stage name (exit
# 2, the name and the valid ones, nothing written), --dump-after without
# --dump-dir and the reverse (exit 2), a DIR that is a file or cannot be
# made (exit 1, the file untouched, no model written).
#   dump_after_cli.sh CARVE EXAMPLE_MODEL
set -uo pipefail
CARVE=$1
EXAMPLE=$2
. "$(dirname "$0")/../lib.sh"
cli_init dump-after

# two stages: exactly their two files, model dumps, different
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o.onnx" --dump-after fold,delegates --dump-dir "$T/d" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && ok || fail_only "lower --dump-after fold,delegates exits $rc: $(cat "$T/err")"
[ "$(ls "$T/d" | tr '\n' ' ')" = "04-fold.txt 08-delegates.txt " ] && ok || fail_only "files: $(ls "$T/d")"
head -1 "$T/d/04-fold.txt" | grep -q '^model ir_version=' && ok || fail_only "04-fold.txt is not a model dump"
! grep -q 'Delegate' "$T/d/04-fold.txt" && grep -q '= ai.carve.Delegate(' "$T/d/08-delegates.txt" && ok ||
  fail_only "the fold dump has a Delegate or the delegates dump has none"
cmp -s "$T/d/04-fold.txt" "$T/d/08-delegates.txt" && fail_only "fold and delegates dumps are equal" || ok
[ -s "$T/o.onnx" ] && ok || fail_only "no lowered model written"

# the same lowering again gives the same dumps (deterministic)
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o2.onnx" --dump-after delegates,fold --dump-dir "$T/d2" 2>"$T/err"
diff -r "$T/d" "$T/d2" >/dev/null && ok || fail_only "a second lowering dumps differently"

# rounds: lpai decomposes, so infer, partition, decompose run twice
"$CARVE" lower "$EXAMPLE" --target lpai -o "$T/o.onnx" --dump-after partition,decompose --dump-dir "$T/r" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && ok || fail_only "lower --target lpai exits $rc: $(cat "$T/err")"
[ "$(ls "$T/r" | tr '\n' ' ')" = "06-partition.r1.txt 06-partition.r2.txt 07-decompose.r1.txt 07-decompose.r2.txt " ] &&
  ok || fail_only "round files: $(ls "$T/r")"
grep -q '^placement round 2$' "$T/r/06-partition.r2.txt" && ok || fail_only "no placement in the partition dump"

# an unknown stage: exit 2, the name and the stages, nothing written
echo keep >"$T/o.onnx"
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o.onnx" --dump-after fold,folding --dump-dir "$T/u" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && ok || fail_only "an unknown stage exits $rc, not 2"
grep -q "no stage named 'folding' (stages: check, skip, upgrade, fold, infer, partition, decompose, delegates, legalize, encodings, verify, compile, report; or all)" "$T/err" &&
  ok || fail_only "message: $(cat "$T/err")"
[ ! -e "$T/u" ] && [ "$(cat "$T/o.onnx")" = keep ] && ok || fail_only "an unknown stage wrote something"

# one flag without the other
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o.onnx" --dump-after fold 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--dump-after needs --dump-dir DIR" "$T/err" && ok || fail_only "no --dump-dir: $rc $(cat "$T/err")"
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o.onnx" --dump-dir "$T/u" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--dump-dir is given without --dump-after" "$T/err" && ok ||
  fail_only "no --dump-after: $rc $(cat "$T/err")"
[ ! -e "$T/u" ] && [ "$(cat "$T/o.onnx")" = keep ] && ok || fail_only "a usage error wrote something"

# a DIR that is a file, or cannot be made
echo plain >"$T/file"
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o.onnx" --dump-after fold --dump-dir "$T/file" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q -- "--dump-dir $T/file: not a folder" "$T/err" && ok || fail_only "a file as DIR: $rc $(cat "$T/err")"
"$CARVE" lower "$EXAMPLE" --target htp -o "$T/o.onnx" --dump-after fold --dump-dir "$T/file/sub" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q -- "--dump-dir $T/file/sub: Not a directory" "$T/err" && ok ||
  fail_only "DIR under a file: $rc $(cat "$T/err")"
[ "$(cat "$T/file")" = plain ] && [ "$(cat "$T/o.onnx")" = keep ] && ok || fail_only "a bad DIR changed a file"

# --help lists the stages
"$CARVE" lower --help >"$T/out"
grep -q -- '--dump-after STAGE,' "$T/out" && grep -q '^ *check, skip, upgrade, fold, infer, partition,$' "$T/out" &&
  ok || fail_only "--help: $(grep -A4 dump-after "$T/out")"

finish_counts
