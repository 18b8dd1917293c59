#!/usr/bin/env bash
# report_cli.sh: `carve report` and `carve lower --html` from the command
# line (no browser): usage errors exit 2, bad reports exit 1 naming the file
# and the problem, no input is ever overwritten, a failed run leaves no
# file, and the page is self-contained (no network reference, report text
# cannot close its <script>).
#
#   tests/browser/report_cli.sh BUILD_DIR [TESTDATA_DIR]
set -uo pipefail
BUILD=$1
TESTDATA=${2:-/usr/share/libonnx-testdata/data}
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
expect 1 "refusing to overwrite" -- "$CARVE" report "$T/ex.json" -o "$T/ex.json"
[ "$(sha256sum <"$T/ex.json")" = "$sum_report" ] && ok "the report is untouched" || bad "the report was changed"
sum_model=$(sha256sum <"$T/ex.onnx")
expect 1 "refusing to overwrite" -- "$CARVE" report "$T/ex.json" --model "$T/ex.onnx" -o "$T/ex.onnx"
[ "$(sha256sum <"$T/ex.onnx")" = "$sum_model" ] && ok "the model is untouched" || bad "the model was changed"
cp "$BUILD/example.onnx" "$T/in.onnx"
sum_in=$(sha256sum <"$T/in.onnx")
expect 1 "refusing to overwrite" -- "$CARVE" lower "$T/in.onnx" --target htp -o "$T/low.onnx" --html "$T/in.onnx"
[ "$(sha256sum <"$T/in.onnx")" = "$sum_in" ] && ok "lower --html never writes onto its model" || bad "lower --html changed its model"
expect 2 "unknown option or missing value: '--html'" -- "$CARVE" lower "$T/in.onnx" --target htp -o "$T/low.onnx" --html

rm -f "$T/low.onnx"
expect 1 "would both be written" -- "$CARVE" lower "$T/in.onnx" --target htp -o "$T/low.onnx" --html "$T/low.onnx"
[ ! -e "$T/low.onnx" ] && ok "a page and a model on one path: neither is written" || bad "$T/low.onnx was written"
"$CARVE" report "$T/ex.json" -o - >"$T/stdout.html" 2>"$T/err"
grep -q 'carve partition map' "$T/stdout.html" && grep -q "map: standard output" "$T/err" && ok "-o - writes the page to standard output" || bad "-o - did not write the page"

# a page, written over an older file of the same name, with no temporary left
echo old >"$T/m.html"
expect 0 "map: $T/m.html" -- "$CARVE" report "$T/ex.json" --model "$T/ex.onnx" -o "$T/m.html"
ls -A "$T" | grep -q "carve-tmp\|\.tmp\." && bad "a temporary file was left" || ok "no temporary file left"
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

# what schema 2 adds for the page: levels, values, graphs, subgraphs, counts
check_json() { # FILE JS-EXPRESSION-ON-r DESCRIPTION
  if node -e "const r = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); process.exit(($2) ? 0 : 1)" "$1"; then ok "$3"
  else bad "$3"; fi
}
E=$T/ex.json
check_json "$E" "r.schema_version === 2" "schema_version is 2"
check_json "$E" "r.nodes.every((n) => n.graph === 'main' && Number.isInteger(n.level) && Array.isArray(n.inputs) && Array.isArray(n.outputs))" "every node has its graph, level, inputs and outputs"
check_json "$E" "(([c, rl, p, f]) => c.level === 0 && rl.level === 1 && p.level === 2 && JSON.stringify(c.inputs) === '[\"x\",\"conv.w\",\"conv.b\"]' && JSON.stringify(rl.inputs) === '[\"conv.out\"]' && f.level === 3)(['conv', 'relu', 'pool', 'flatten'].map((k) => r.nodes.find((n) => n.name === k)))" "levels and value names of the example's first nodes"
check_json "$E" "r.nodes.every((n) => n.inputs.every((v) => { const p = r.nodes.find((q) => q.outputs.includes(v)); return !p || p.level < n.level; }))" "a node's level is above its producers'"
check_json "$E" "r.counts.nodes === r.nodes.length && r.counts.partitions === r.partitions.length && r.counts.cpu === r.nodes.filter((n) => n.placement === 'cpu').length && r.counts.folded === r.nodes.filter((n) => n.placement === 'folded' || n.placement === 'removed').length" "counts agree with the nodes"
grep -q "$(node -e "const r = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); const c = r.counts; console.log(c.delegated + ' of ' + (c.delegated + c.cpu) + ' nodes delegated in ' + c.partitions)" "$E")" <("$CARVE" lower "$BUILD/example.onnx" --target htp -o "$T/ex2.onnx" 2>&1) &&
  ok "counts equal the human summary's" || bad "counts differ from the human summary"
if [ -f "$TESTDATA/node/test_if/model.onnx" ]; then
  "$CARVE" lower "$TESTDATA/node/test_if/model.onnx" --target htp -o "$T/if.onnx" --report "$T/if.json" 2>/dev/null || bad "lower test_if"
  check_json "$T/if.json" "(() => { const i = r.nodes.find((n) => n.op === 'If'); const s = i.subgraphs.map((g) => g.attribute + '=' + g.graph).sort().join(); return s === 'else_branch=else_body,then_branch=then_body' && r.graphs.length === 3 && r.graphs.slice(1).every((g) => g.node === i.name && g.parent === r.graphs[0].name) && r.nodes.filter((n) => n.graph === 'then_body').length === 1; })()" "an If lists its subgraphs, the graphs section their owner, subgraph nodes their graph"
else
  bad "no $TESTDATA/node/test_if/model.onnx"
fi

echo "report_cli: $fails failed"
[ "$fails" = 0 ]
