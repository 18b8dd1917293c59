// partitions.js: runs every partition `carve lower --export-partitions DIR`
// wrote in onnxruntime (one thread), fed with the values a carve run of the
// whole model computed for its inputs, and compares its outputs with that
// run's values of the same names.
//   node partitions.js EXPORT_DIR VALUES_DIR [MORE_VALUES_DIR] [--atol A] [--rtol R]
// VALUES_DIR holds `carve run --dump-values` of the original model; a value
// it lacks (one made by lowering: a decomposition's piece) is taken from
// MORE_VALUES_DIR (the lowered model's run). Prints a line per partition;
// exits 1 when an element breaks |ort - carve| <= atol + rtol * |carve|.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require('onnxruntime-node');
const npy = require('./npy');

function loadIndex(dir) {
  const idx = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));
  const map = new Map();
  for (const v of idx.values) map.set(v.name, path.join(dir, v.file));
  return map;
}

async function main() {
  const args = process.argv.slice(2);
  const pos = [];
  let atol = 1e-4, rtol = 1e-3;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--atol') atol = Number(args[++i]);
    else if (args[i] === '--rtol') rtol = Number(args[++i]);
    else pos.push(args[i]);
  }
  const [dir, orig, lowered] = pos;
  const man = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const srcs = [loadIndex(orig)].concat(lowered ? [loadIndex(lowered)] : []);
  const find = name => { for (let k = 0; k < srcs.length; k++) if (srcs[k].has(name)) return [srcs[k].get(name), k]; return [null, -1]; };
  let bad = 0, parts = 0, fromLowered = 0, notRun = 0;
  for (const p of man.partitions) {
    if (p.graph !== 'main' && p.inputs.concat(p.outputs).some(io => !find(io.value)[0])) {
      // a partition of an If branch these inputs do not take: the run never computed its values
      console.log(`skip ${p.name}: the run never computed its values (in ${p.graph}, a branch not taken)`);
      notRun++;
      continue;
    }
    parts++;
    const session = await ort.InferenceSession.create(path.join(dir, p.file), { intraOpNumThreads: 1, interOpNumThreads: 1 });
    const feeds = {};
    for (const io of p.inputs) {
      const [f, k] = find(io.value);
      if (!f) throw new Error(`${p.name}: no value for input ${io.value}`);
      fromLowered += k;
      const t = npy.read(f);
      if (t.type !== io.dtype && !(t.type === 'bool' && io.dtype === 'bool'))
        throw new Error(`${p.name}: input ${io.name} is ${io.dtype}, the run's value is ${t.type}`);
      feeds[io.name] = new ort.Tensor(t.type, t.data, t.dims);
    }
    const res = await session.run(feeds);
    let worstAbs = 0, fails = 0, n = 0;
    const notes = [];
    for (const io of p.outputs) {
      const [f, k] = find(io.value);
      if (!f) throw new Error(`${p.name}: no value for output ${io.value}`);
      fromLowered += k;
      const want = npy.read(f), got = res[io.name];
      if (JSON.stringify(want.dims) !== JSON.stringify(got.dims)) {
        fails++;
        notes.push(`${io.name}: shape ${JSON.stringify(got.dims)} vs ${JSON.stringify(want.dims)}`);
        continue;
      }
      const wv = npy.numbers(want.type, want.data), gv = npy.numbers(got.type, got.data);
      for (let i = 0; i < wv.length; i++, n++) {
        const a = gv[i], b = wv[i];
        if ((Number.isNaN(a) && Number.isNaN(b)) || a === b) continue;
        const d = Math.abs(a - b);
        worstAbs = Math.max(worstAbs, d);
        if (!(d <= atol + rtol * Math.abs(b))) { fails++; if (notes.length < 3) notes.push(`${io.name}[${i}]: ort ${a} carve ${b}`); }
      }
    }
    if (fails) bad++;
    console.log(`${fails ? 'FAIL' : 'ok  '} ${p.name}: ${p.inputs.length} inputs, ${p.outputs.length} outputs, ` +
      `${n} elements, max_abs ${worstAbs.toExponential(3)}${fails ? ' ' + notes.join('; ') : ''}`);
  }
  console.log(`partitions ${parts} checked, ${bad} failed, ${notRun} not reached by this run, ${fromLowered} boundary values from the lowered run`);
  process.exit(bad ? 1 : 0);
}
main().catch(e => { console.error(`partitions.js: ${e.message}`); process.exit(2); });
