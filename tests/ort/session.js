// session.js: onnxruntime session creation time, the figure carve lower is
// compared with (bench/lower_vs_ort.sh): graph optimizations at one level
// (default basic), one intra-op and one inter-op thread, symbolic dims fixed
// with freeDimensionOverrides. One creation first as a warm-up (the native
// library and the file in the page cache), then RUNS timed creations in this
// one process; prints the median and every figure in ms, then the first
// creation's time: what a process that converts one model pays, with
// onnxruntime's one-time set-up on first use (not require()'s load of the
// native library).
//   node session.js MODEL RUNS [--level L] [NAME=VALUE ...]
'use strict';
const ort = require('onnxruntime-node');

(async () => {
  const args = process.argv.slice(2);
  const [model, runsArg] = args;
  const runs = Number(runsArg || 5);
  let level = 'basic';
  const dims = {};
  for (let i = 2; i < args.length; i++) {
    if (args[i] === '--level') level = args[++i];
    else {
      const [k, v] = args[i].split('=');
      dims[k] = Number(v);
    }
  }
  const opts = { graphOptimizationLevel: level, intraOpNumThreads: 1, interOpNumThreads: 1,
                 freeDimensionOverrides: dims };
  const f0 = process.hrtime.bigint();
  const first = await ort.InferenceSession.create(model, opts);
  const firstMs = Number(process.hrtime.bigint() - f0) / 1e6;
  await first.release();
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const s = await ort.InferenceSession.create(model, opts);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await s.release();
  }
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(`median ${sorted[Math.floor(runs / 2)].toFixed(1)} ms; runs ${ms.map(x => x.toFixed(1)).join(' ')}; ` +
              `first ${firstMs.toFixed(1)} ms`);
})().catch(e => { console.error(`session.js: ${e.message}`); process.exit(2); });
