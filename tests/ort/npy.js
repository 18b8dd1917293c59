// npy.js: minimal .npy reading and writing for the onnxruntime harness.
'use strict';
const fs = require('fs');

const TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<u4': ['uint32', Uint32Array], '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
  '<f2': ['float16', Uint16Array],
};

function read(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hl = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hl);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const t = TYPES[descr];
  if (!t) throw new Error(`${path}: unsupported dtype ${descr}`);
  const bytes = buf.subarray(off + hl);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new t[1](copy.buffer, 0, bytes.length / t[1].BYTES_PER_ELEMENT);
  return { type: t[0], dims: shape, data: t[0] === 'bool' ? Uint8Array.from(data).map(x => x ? 1 : 0) : data };
}

function write(path, type, dims, data) {
  const descr = Object.keys(TYPES).find(k => TYPES[k][0] === type);
  if (!descr) throw new Error(`cannot write ${type} as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// IEEE 754 binary16 bits -> the number they hold (subnormals, +-0, +-inf, NaN).
function halfToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

// The values of a tensor's data as numbers. float16 data (onnxruntime-node's
// and read()'s) is a Uint16Array of bit patterns: comparing those as numbers
// would compare bits, not values, so they are decoded here.
function numbers(type, data) {
  if (type === 'float16') return Float64Array.from(data, halfToNumber);
  return Array.from(data, Number);
}

module.exports = { read, write, numbers, halfToNumber };
