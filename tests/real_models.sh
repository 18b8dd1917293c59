#!/usr/bin/env bash
# real_models.sh: round-trips the real models of one folder of the model cache
# and runs `carve inspect` on each:
#
#   bash tests/real_models.sh DIR COUNT ROUNDTRIP CARVE CHECK_INSPECT_JSON
#
# DIR must hold exactly COUNT .onnx files (scripts/fetch-models.sh puts them
# there). For each: import -> verify -> export -> re-import gives the same IR
# (ROUNDTRIP); `carve inspect` exits 0 and counts the nodes; `carve inspect
# --json --nodes` exits 0 and its JSON agrees with the model
# (CHECK_INSPECT_JSON). A missing cache fails: it is never skipped.
set -euo pipefail

DIR=$1 COUNT=$2 ROUNDTRIP=$3 CARVE=$4 CHECK_JSON=$5
if [ ! -d "$DIR" ]; then
  echo "FAIL: $DIR does not exist: run scripts/fetch-models.sh first"
  echo "      (it fills \$CARVE_MODEL_CACHE, default \$HOME/.cache/carve-models; configure"
  echo "      with -DCARVE_MODEL_CACHE=... if yours is elsewhere)"
  exit 1
fi
mapfile -t models < <(find "$DIR" -name '*.onnx' -type f | LC_ALL=C sort)
if [ "${#models[@]}" -ne "$COUNT" ]; then
  echo "FAIL: $DIR holds ${#models[@]} .onnx files, expected $COUNT: run scripts/fetch-models.sh"
  exit 1
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/carve-real-XXXXXX")
trap 'rm -rf "$T"' EXIT

failures=0
"$ROUNDTRIP" "${models[@]}" || failures=$((failures + 1))
for m in "${models[@]}"; do
  name=${m#"$DIR"/}
  if ! "$CARVE" inspect "$m" > "$T/text" 2> "$T/err"; then
    echo "FAIL $name: carve inspect: $(cat "$T/err")"
    failures=$((failures + 1))
    continue
  fi
  if ! grep -qE '^nodes: [0-9]+ in [0-9]+ graphs?$' "$T/text"; then
    echo "FAIL $name: carve inspect prints no node count"
    failures=$((failures + 1))
  fi
  if ! "$CARVE" inspect --json --nodes "$m" > "$T/json" 2> "$T/err"; then
    echo "FAIL $name: carve inspect --json --nodes: $(cat "$T/err")"
    failures=$((failures + 1))
    continue
  fi
  if out=$("$CHECK_JSON" "$m" "$T/json" 2>&1); then
    echo "ok   $name: $(grep -E '^nodes:' "$T/text"), $out"
  else
    echo "FAIL $name: $out"
    failures=$((failures + 1))
  fi
done
if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s) in $DIR"
  exit 1
fi
echo "all ${#models[@]} models of $DIR ok"
