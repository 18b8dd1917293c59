// optimize.js: saves MODEL as onnxruntime optimizes it at one graph
// optimization level (default 'basic': constant folding and the other
// semantics-preserving rewrites), so carve's folding can be compared with it.
//   node optimize.js MODEL OUT.onnx [--level disabled|basic|extended|all]
// onnxruntime writes the optimized graph while it creates the session; no
// inference is run.
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const args = process.argv.slice(2);
  let level = 'basic';
  const files = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--level') level = args[++i];
    else files.push(args[i]);
  }
  if (files.length !== 2 || !['disabled', 'basic', 'extended', 'all'].includes(level)) {
    console.error('usage: node optimize.js MODEL OUT.onnx [--level disabled|basic|extended|all]');
    process.exit(2);
  }
  const [model, out] = files;
  await ort.InferenceSession.create(model, {
    graphOptimizationLevel: level,
    optimizedModelFilePath: out,
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
}
main().catch(e => { console.error(`optimize.js: ${e.message}`); process.exit(1); });
