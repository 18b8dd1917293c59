// test_npy.js: the onnxruntime harness reads float16 values as values, not as
// their bit patterns (npy.numbers), and .npy float16 files round-trip.
//   node test_npy.js
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const npy = require('./npy');

let failed = 0;
function expect(what, got, want) {
  const same = Number.isNaN(want) ? Number.isNaN(got) : Object.is(got, want);
  if (!same) { failed++; console.log(`FAIL ${what}: got ${got}, want ${want}`); }
}

// halfToNumber: one pattern of each kind of binary16 value
const cases = [
  [0x3c00, 1], [0xc000, -2], [0x3555, 0.333251953125], [0x7bff, 65504], [0x0400, 2 ** -14],
  [0x0001, 2 ** -24], [0x03ff, 1023 * 2 ** -24], [0x0000, 0], [0x8000, -0],
  [0x7c00, Infinity], [0xfc00, -Infinity], [0x7e00, NaN], [0x6708, 1800], [0x66f0, 1776],
];
for (const [bits, want] of cases) expect(`halfToNumber(0x${bits.toString(16)})`, npy.halfToNumber(bits), want);

// numbers(): float16 data decoded; other types as numbers
const half = Uint16Array.from(cases.map(c => c[0]));
const dec = npy.numbers('float16', half);
cases.forEach(([bits, want], i) => expect(`numbers float16[${i}] (0x${bits.toString(16)})`, dec[i], want));
expect('numbers int64', npy.numbers('int64', BigInt64Array.from([-3n]))[0], -3);
expect('numbers float32', npy.numbers('float32', Float32Array.from([0.5]))[0], 0.5);

// The case the per-partition test got wrong: 0x0708 and 0x06f0 are about 1.07e-4 and 1.06e-4
// (1.5e-6 apart, inside atol 1e-2), not 1800 and 1776 (24 apart).
const d = Math.abs(npy.halfToNumber(0x0708) - npy.halfToNumber(0x06f0));
if (!(d < 2e-6)) { failed++; console.log(`FAIL 0x0708 vs 0x06f0 differ by ${d}, want about 1.5e-6`); }

// a float16 .npy file written and read back keeps its type, shape and values
const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'npy-')), 'h.npy');
npy.write(f, 'float16', [2, 7], half);
const back = npy.read(f);
expect('read type', back.type, 'float16');
expect('read dims', JSON.stringify(back.dims), '[2,7]');
const bv = npy.numbers(back.type, back.data);
cases.forEach(([, want], i) => expect(`round trip [${i}]`, bv[i], want));
fs.rmSync(path.dirname(f), { recursive: true });

console.log(failed ? `${failed} failed` : `ok: ${cases.length} float16 patterns decoded, file round trip`);
process.exit(failed ? 1 : 0);
