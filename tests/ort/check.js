// check.js: runs MODEL on onnxruntime (one thread) with the inputs carve used
// (RUN_DIR/inputs/<name>.npy, written by `carve run --output-dir RUN_DIR`)
// and compares every output with carve's RUN_DIR/<name>.npy.
//   node check.js MODEL RUN_DIR [--atol A] [--rtol R]
// Prints the largest absolute and relative error per output; exits 1 when
// an element breaks |carve - ort| <= atol + rtol * |ort|.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require('onnxruntime-node');
const npy = require('./npy');

const clean = s => s.replace(/[/\\: ]/g, '_');

async function main() {
  const args = process.argv.slice(2);
  const [model, dir] = args;
  let atol = 1e-4, rtol = 1e-4;
  for (let i = 2; i < args.length; i++) {
    if (args[i] === '--atol') atol = Number(args[++i]);
    else if (args[i] === '--rtol') rtol = Number(args[++i]);
  }
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feeds = {};
  for (const name of session.inputNames) {
    const f = path.join(dir, 'inputs', clean(name) + '.npy');
    if (!fs.existsSync(f)) throw new Error(`no input file ${f}`);
    const t = npy.read(f);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const results = await session.run(feeds);
  let bad = 0;
  for (const name of session.outputNames) {
    const want = results[name];
    const got = npy.read(path.join(dir, clean(name) + '.npy'));
    const shapeOk = JSON.stringify(got.dims) === JSON.stringify(want.dims);
    let maxAbs = 0, maxRel = 0, fails = 0;
    if (shapeOk) {
      const wv = npy.numbers(want.type, want.data), gv = npy.numbers(got.type, got.data);
      for (let i = 0; i < wv.length; i++) {
        const a = gv[i], b = wv[i];
        if ((Number.isNaN(a) && Number.isNaN(b)) || a === b) continue;
        const d = Math.abs(a - b);
        maxAbs = Math.max(maxAbs, d);
        if (b !== 0) maxRel = Math.max(maxRel, d / Math.abs(b));
        if (!(d <= atol + rtol * Math.abs(b))) fails++;
      }
    }
    const ok = shapeOk && fails === 0;
    if (!ok) bad++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: shape ${JSON.stringify(got.dims)}${shapeOk ? '' : ' vs ort ' + JSON.stringify(want.dims)}` +
      ` max_abs ${maxAbs.toExponential(3)} max_rel ${maxRel.toExponential(3)} (${fails} beyond atol ${atol} rtol ${rtol})`);
  }
  process.exit(bad ? 1 : 0);
}
main().catch(e => { console.error(`check.js: ${e.message}`); process.exit(2); });
