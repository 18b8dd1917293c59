#!/usr/bin/env bash
# report_cli.sh: `carve report` and `carve lower --html` from the command
# line (no browser): usage errors exit 2, bad reports exit 1 naming the file
# and the problem, no input is ever overwritten, a failed run leaves no
# file, and the page is self-contained (no network reference, report text
# cannot close its <script>).
#
#   tests/browser/report_cli.sh BUILD_DIR
set -uo pipefail
BUILD=$1
CARVE=$BUILD/carve
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
# expect CODE TEXT -- command...: exit code and a piece of stderr
expect() {
  local code=$1 text=$2
  shift 3
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" = "$code" ] && grep -qF -- "$text" "$T/err"; then ok "$* -> $code '$text'"
  else bad "$* -> $rc (want $code '$text'): $(head -c 300 "$T/err")"; fi
}

"$CARVE" lower "$BUILD/example.onnx" --target htp -o "$T/ex.onnx" --report "$T/ex.json" 2>/dev/null || bad "lower the example"
sum_report=$(sha256sum <"$T/ex.json")

expect 2 "no report given" -- "$CARVE" report
expect 2 "no output given" -- "$CARVE" report "$T/ex.json"
expect 2 "unknown option '--bogus'" -- "$CARVE" report "$T/ex.json" --bogus x -o "$T/m.html"
expect 2 "one report at a time" -- "$CARVE" report "$T/ex.json" "$T/ex.json" -o "$T/m.html"
expect 1 "$T/missing.json: No such file" -- "$CARVE" report "$T/missing.json" -o "$T/m.html"
echo '{"nodes": [' >"$T/broken.json"
expect 1 "broken.json: not valid JSON" -- "$CARVE" report "$T/broken.json" -o "$T/m.html"
echo '{"schema_version": 2}' >"$T/nonodes.json"
expect 1 "no \"nodes\" array" -- "$CARVE" report "$T/nonodes.json" -o "$T/m.html"
expect 1 "missing.onnx" -- "$CARVE" report "$T/ex.json" --model "$T/missing.onnx" -o "$T/m.html"
[ ! -e "$T/m.html" ] && ok "failed runs leave no page" || bad "a failed run left $T/m.html"
expect 1 "is an input" -- "$CARVE" report "$T/ex.json" -o "$T/ex.json"
[ "$(sha256sum <"$T/ex.json")" = "$sum_report" ] && ok "the report is untouched" || bad "the report was changed"
sum_model=$(sha256sum <"$T/ex.onnx")
expect 1 "is an input" -- "$CARVE" report "$T/ex.json" --model "$T/ex.onnx" -o "$T/ex.onnx"
[ "$(sha256sum <"$T/ex.onnx")" = "$sum_model" ] && ok "the model is untouched" || bad "the model was changed"
cp "$BUILD/example.onnx" "$T/in.onnx"
sum_in=$(sha256sum <"$T/in.onnx")
expect 1 "is an input" -- "$CARVE" lower "$T/in.onnx" --target htp -o "$T/low.onnx" --html "$T/in.onnx"
[ "$(sha256sum <"$T/in.onnx")" = "$sum_in" ] && ok "lower --html never writes onto its model" || bad "lower --html changed its model"
expect 2 "unknown option or missing value: '--html'" -- "$CARVE" lower "$T/in.onnx" --target htp -o "$T/low.onnx" --html

# a page, written over an older file of the same name, with no temporary left
echo old >"$T/m.html"
expect 0 "map: $T/m.html" -- "$CARVE" report "$T/ex.json" --model "$T/ex.onnx" -o "$T/m.html"
ls "$T" | grep -q '\.tmp\.' && bad "a temporary file was left" || ok "no temporary file left"
grep -q 'carve partition map' "$T/m.html" && ok "the page replaced the old file" || bad "the page is not there"
grep -qE '(src|href)=["'"'"']?(https?:)?//' "$T/m.html" && bad "the page references the network" || ok "the page references no network resource"
grep -q '"conv.w":"float32\[' "$T/m.html" && ok "--model adds the values' types" || bad "--model added no types"
expect 0 "map: $T/l.html" -- "$CARVE" lower "$T/in.onnx" --target htp -o "$T/low.onnx" --html "$T/l.html"
grep -q '"schema_version":2' "$T/l.html" && ok "lower --html embeds the report" || bad "lower --html lacks the report"

# report text that tries to close the script: every '<' is escaped
"$CARVE" report "$HERE/future_report.json" -o "$T/f.html" 2>/dev/null || bad "the future report renders"
n=$(grep -o '</script' "$T/f.html" | wc -l)
[ "$n" = 3 ] && ok "only the page's own 3 scripts close" || bad "$n '</script' in the page (want 3)"
grep -qF 'topk\u003c/script>' "$T/f.html" && ok "'<' in names is written as \\u003c" || bad "'<' not escaped"

echo "report_cli: $fails failed"
[ "$fails" = 0 ]
