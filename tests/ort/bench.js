// bench.js: onnxruntime (one thread, or ORT_THREADS) time per run and peak
// memory on the inputs carve used (RUN_DIR/inputs/*.npy, from `carve run
// --output-dir`), after one untimed warm-up run; and, on a line of its own,
// the first run's time with the session's creation (what `carve run
// --warmup 1` prints as its first run: loading and compiling included).
//   node bench.js MODEL RUN_DIR RUNS
'use strict';
const path = require('path');
const ort = require('onnxruntime-node');
const npy = require('./npy');

(async () => {
  const [model, dir, runsArg] = process.argv.slice(2);
  const runs = Number(runsArg || 5);
  const threads = Number(process.env.ORT_THREADS || 1);
  const c0 = process.hrtime.bigint();
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const feeds = {};
  for (const name of s.inputNames) {
    const t = npy.read(path.join(dir, 'inputs', name.replace(/[/\\: ]/g, '_') + '.npy'));
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  await s.run(feeds); // warm-up, as `carve run --warmup 1`
  const firstMs = Number(process.hrtime.bigint() - c0) / 1e6;
  let total = 0, best = Infinity, peak = process.memoryUsage().rss;
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    total += ms; best = Math.min(best, ms);
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  const dec = total / runs < 10 ? 3 : 1; // short runs (a VAD frame) need the digits, as carve prints them
  console.log(`first run: ${firstMs.toFixed(dec)} ms (session creation and the first run, not in the time per run)`);
  console.log(`time per run: ${(total / runs).toFixed(dec)} ms mean, ${best.toFixed(dec)} ms best over ${runs} runs; peak memory ${(peak / 1048576).toFixed(1)} MiB (rss)`);
})().catch(e => { console.error(e.message); process.exit(2); });
