#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU, onnxruntime-node) and prints one JSON line of timings.
//
//   node ort_run.js MODEL.onnx [--threads T] [--warmup W] [--runs N] [--seed S]
//                   [--inputs DIR] [--input NAME=FILE.npy]... [--save-inputs DIR]
//                   [--dump-outputs DIR] [--shape NAME=1x3x224x224] [--opt LEVEL] [--ort-dir DIR]
//                   [--profile FILE]
//
// Inputs: --input NAME=FILE.npy gives one input its value (a value emberc --bind fixed, say);
// the others are read from DIR/NAME.npy with --inputs, otherwise generated from --seed (default 0): float
// tensors uniform in [-1, 1), integer tensors uniform in [0, 10), bool tensors fair coin flips.
// Each input has its own stream derived from the seed and its position, so the same seed always
// gives the same values; --save-inputs writes them as DIR/NAME.npy so Ember can be fed the same data.
// In file names every character outside [A-Za-z0-9_.-] becomes '_'.
// --dump-outputs writes DIR/output_0.npy, output_1.npy, ... in graph output order (the names
// ember-run uses).
//
// Session: CPU execution provider, intra-op threads T, inter-op threads 1, sequential execution,
// graph optimisation level LEVEL (default "all").
//
// --profile FILE turns on ORT's own profiling and writes FILE: one JSON row per node in execution
// order ({node, op, median_us, runs}: the median of its kernel time over every run, warm-up
// included), to set beside `ember-run ART --bench --trace` kernel by kernel. Profiling slows the
// runs: the JSON line's timings are then not the plain ones.
//
// The JSON line holds: model, threads, runs, warmup, median_ms, mean_ms, p10_ms, p90_ms, p99_ms,
// min_ms, max_ms, load_ms, ort_version, cpu_per_wall (process CPU time / wall time over the timed runs;
// near T when the run had its cores), loadavg_1m, inputs and outputs ({name: {shape, type, file}}).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const USAGE = 'usage: node ort_run.js MODEL.onnx [--threads T] [--warmup W] [--runs N] [--seed S] ' +
    '[--inputs DIR] [--input NAME=FILE.npy]... [--save-inputs DIR] [--dump-outputs DIR] ' +
    '[--shape NAME=DxDx..] [--opt LEVEL] ' +
    '[--ort-dir DIR] [--profile FILE]';

function fail(message) {
  process.stderr.write('ort_run.js: ' + message + '\n');
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const opts = {
    model: null, threads: 1, warmup: 5, runs: 20, seed: 0, inputs: null, saveInputs: null,
    dumpOutputs: null, shapes: {}, files: {}, opt: 'all', profile: null,
    ortDir: process.env.EMBER_ORT_DIR || path.join(os.homedir(), '.cache', 'ember', 'ort'),
  };
  const intOption = (name, value, min) => {
    if (!/^\d+$/.test(value || '') || Number(value) < min) {
      fail(`${name} wants an integer >= ${min}, got ${JSON.stringify(value)}`);
    }
    return Number(value);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${arg} needs a value\n${USAGE}`);
      return argv[++i];
    };
    switch (arg) {
      case '--threads': opts.threads = intOption(arg, value(), 1); break;
      case '--warmup': opts.warmup = intOption(arg, value(), 0); break;
      case '--runs': opts.runs = intOption(arg, value(), 1); break;
      case '--seed': opts.seed = intOption(arg, value(), 0); break;
      case '--inputs': opts.inputs = value(); break;
      case '--input': {
        const m = /^([^=]+)=(.+)$/.exec(value());
        if (!m) fail(`--input wants NAME=FILE.npy, got ${JSON.stringify(argv[i])}`);
        opts.files[m[1]] = m[2];
        break;
      }
      case '--save-inputs': opts.saveInputs = value(); break;
      case '--dump-outputs': opts.dumpOutputs = value(); break;
      case '--ort-dir': opts.ortDir = value(); break;
      case '--profile': opts.profile = value(); break;
      case '--opt': {
        opts.opt = value();
        const levels = ['disabled', 'basic', 'extended', 'layout', 'all'];
        if (!levels.includes(opts.opt)) fail(`--opt wants one of ${levels.join(', ')}, got ${opts.opt}`);
        break;
      }
      case '--shape': {
        const m = /^([^=]+)=(\d+(?:x\d+)*)$/.exec(value());
        if (!m) fail(`--shape wants NAME=D0xD1x..., got ${JSON.stringify(argv[i])}`);
        opts.shapes[m[1]] = m[2].split('x').map(Number);
        break;
      }
      case '-h': case '--help':
        process.stdout.write(USAGE + '\n');
        process.exit(0);
        break;
      default:
        if (arg.startsWith('-')) fail(`unknown option ${arg}\n${USAGE}`);
        if (opts.model !== null) fail(`more than one model given (${opts.model}, ${arg})\n${USAGE}`);
        opts.model = arg;
    }
  }
  if (opts.model === null) fail(USAGE);
  return opts;
}

function loadOrt(dir) {
  const pkg = path.join(dir, 'node_modules', 'onnxruntime-node');
  try {
    return require(pkg);
  } catch (e) {
    fail(`cannot load onnxruntime-node from ${pkg} (${e.message.split('\n')[0]}); ` +
         'run bench/peer/install_ort.sh or set EMBER_ORT_DIR');
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// .npy files (format version 1.0 written; 1.0, 2.0 and 3.0 read), little-endian, C order.

const NPY_TYPES = {
  float32: {descr: '<f4', array: Float32Array},
  float64: {descr: '<f8', array: Float64Array},
  int8: {descr: '|i1', array: Int8Array},
  uint8: {descr: '|u1', array: Uint8Array},
  int16: {descr: '<i2', array: Int16Array},
  uint16: {descr: '<u2', array: Uint16Array},
  int32: {descr: '<i4', array: Int32Array},
  uint32: {descr: '<u4', array: Uint32Array},
  int64: {descr: '<i8', array: BigInt64Array},
  uint64: {descr: '<u8', array: BigUint64Array},
  bool: {descr: '|b1', array: Uint8Array},
};
const DESCR_TO_TYPE = {};
for (const [type, info] of Object.entries(NPY_TYPES)) DESCR_TO_TYPE[info.descr] = type;
DESCR_TO_TYPE['<u1'] = 'uint8';
DESCR_TO_TYPE['<i1'] = 'int8';
DESCR_TO_TYPE['<b1'] = 'bool';

function writeNpy(file, type, shape, data) {
  const info = NPY_TYPES[type];
  if (!info) fail(`cannot write ${file}: dtype ${type} has no .npy mapping here`);
  const dims = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${info.descr}', 'fortran_order': False, 'shape': ${dims}, }`;
  const unpadded = 10 + header.length + 1;  // magic + version + length field, header, '\n'
  header += ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'), bytes]));
}

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    fail(`cannot read ${file}: ${e.message}`);
  }
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') {
    fail(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  let headerLen;
  let start;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    start = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) fail(`${file}: truncated header`);
    headerLen = buf.readUInt32LE(8);
    start = 12;
  } else {
    fail(`${file}: unsupported .npy format version ${major}.${buf[7]}`);
  }
  if (start + headerLen > buf.length) fail(`${file}: header runs past the end of the file`);
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shapeMatch = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeMatch) fail(`${file}: cannot parse header ${JSON.stringify(header)}`);
  const type = DESCR_TO_TYPE[descr[1]];
  if (!type) {
    fail(`${file}: dtype ${descr[1]} not supported (expected one of ` +
         `${Object.values(NPY_TYPES).map((t) => t.descr).join(' ')})`);
  }
  if (fortran[1] === 'True') fail(`${file}: Fortran-order arrays are not supported`);
  const shape = shapeMatch[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (shape.some((d) => !Number.isSafeInteger(d) || d < 0)) fail(`${file}: bad shape (${shapeMatch[1]})`);
  const count = shape.reduce((a, b) => a * b, 1);
  const ArrayType = NPY_TYPES[type].array;
  const byteLength = count * ArrayType.BYTES_PER_ELEMENT;
  const dataStart = start + headerLen;
  if (buf.length - dataStart !== byteLength) {
    fail(`${file}: shape (${shape.join(',')}) of ${type} needs ${byteLength} bytes of data, ` +
         `the file has ${buf.length - dataStart}`);
  }
  const copy = new ArrayBuffer(byteLength);  // aligned copy for the typed array view
  new Uint8Array(copy).set(buf.subarray(dataStart));
  return {type, shape, data: new ArrayType(copy)};
}

function fileStem(name) {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_');
}

// ---------------------------------------------------------------------------------------------
// Seeded inputs: one 32-bit generator (mulberry32) per input, seeded from (seed, position).

function mix32(a, b) {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

function makeRng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

function randomTensorData(type, count, seed, position) {
  const next = makeRng(mix32(seed, position));
  const info = NPY_TYPES[type];
  if (!info) fail(`cannot generate random data for an input of type ${type}; pass --inputs`);
  const out = new info.array(count);
  if (type === 'float32' || type === 'float64') {
    // 24 random bits -> k / 2^23 - 1, exactly representable in float32: uniform in [-1, 1).
    for (let i = 0; i < count; i++) out[i] = (next() >>> 8) / 8388608 - 1;
  } else if (type === 'bool') {
    for (let i = 0; i < count; i++) out[i] = next() >>> 31;
  } else if (type === 'int64' || type === 'uint64') {
    for (let i = 0; i < count; i++) out[i] = BigInt(next() % 10);
  } else {
    for (let i = 0; i < count; i++) out[i] = next() % 10;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

function concreteShape(meta, opts) {
  if (opts.shapes[meta.name]) return opts.shapes[meta.name];
  const dims = meta.shape;
  const symbolic = dims.filter((d) => typeof d !== 'number' || d < 0);
  if (symbolic.length) {
    fail(`input ${meta.name} has symbolic dimensions [${dims.join(', ')}]; ` +
         `give --shape ${meta.name}=D0xD1x...`);
  }
  return dims.slice();
}

function percentile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function round3(x) {
  return Math.round(x * 1000) / 1000;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(opts.model)) fail(`model file ${opts.model} does not exist`);
  const ort = loadOrt(opts.ortDir);

  // ORT writes its trace at release, under a prefix it appends a timestamp to: a directory of
  // this run's own next to FILE holds it, so runs in the same directory never share one.
  const profileDir = opts.profile ?
      fs.mkdtempSync(path.join(path.dirname(path.resolve(opts.profile)), '.ort-profile-')) : null;
  const loadStart = process.hrtime.bigint();
  let session;
  try {
    session = await ort.InferenceSession.create(opts.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: opts.opt,
      ...(profileDir ? {enableProfiling: true, profileFilePrefix: path.join(profileDir, 'ort')} : {}),
    });
  } catch (e) {
    fail(`ONNX Runtime could not load ${opts.model}: ${e.message.split('\n')[0]}`);
  }
  const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6;

  const unknown = Object.keys(opts.files).filter((n) => !session.inputNames.includes(n));
  if (unknown.length) {
    fail(`--input ${unknown[0]}: the model has no such input; inputs are: ` +
         session.inputNames.join(', '));
  }
  const feeds = {};
  const inputsReport = {};
  for (const dir of [opts.saveInputs, opts.dumpOutputs]) {
    if (dir) fs.mkdirSync(dir, {recursive: true});
  }
  session.inputMetadata.forEach((meta, position) => {
    if (!meta.isTensor) fail(`input ${meta.name} is not a tensor; only tensor inputs are supported`);
    const shape = concreteShape(meta, opts);
    let type = meta.type;
    let data;
    let source;
    const given = opts.files[meta.name];
    if (given || opts.inputs) {
      const file = given || path.join(opts.inputs, fileStem(meta.name) + '.npy');
      const arr = readNpy(file);
      const declared = meta.shape;
      const shapeOk = arr.shape.length === declared.length &&
          arr.shape.every((d, i) => typeof declared[i] !== 'number' || declared[i] < 0 ||
                          declared[i] === d);
      if (arr.type !== type || !shapeOk) {
        fail(`${file}: ${arr.type} (${arr.shape.join(',')}) does not fit input ${meta.name}: ` +
             `expected ${type} (${declared.join(',')})`);
      }
      data = arr.data;
      source = file;
      shape.splice(0, shape.length, ...arr.shape);
    } else {
      data = randomTensorData(type, shape.reduce((a, b) => a * b, 1), opts.seed, position);
      source = `seed ${opts.seed}`;
    }
    if (opts.saveInputs) {
      const file = path.join(opts.saveInputs, fileStem(meta.name) + '.npy');
      writeNpy(file, type, shape, data);
      source += `, saved to ${file}`;
    }
    feeds[meta.name] = new ort.Tensor(type, type === 'bool' ? new Uint8Array(data) : data, shape);
    inputsReport[meta.name] = {shape, type, source};
  });

  let results;
  for (let i = 0; i < opts.warmup; i++) results = await session.run(feeds);
  const times = [];
  const cpuStart = process.cpuUsage();
  const wallStart = process.hrtime.bigint();
  for (let i = 0; i < opts.runs; i++) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const wallUs = Number(process.hrtime.bigint() - wallStart) / 1e3;
  const cpu = process.cpuUsage(cpuStart);

  const outputsReport = {};
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    const entry = {shape: Array.from(t.dims), type: t.type};
    if (opts.dumpOutputs) {
      const file = path.join(opts.dumpOutputs, `output_${i}.npy`);
      writeNpy(file, t.type, Array.from(t.dims), t.data);
      entry.file = file;
    }
    outputsReport[name] = entry;
  });

  const sorted = times.slice().sort((a, b) => a - b);
  const report = {
    model: opts.model,
    threads: opts.threads,
    runs: opts.runs,
    warmup: opts.warmup,
    median_ms: round3(percentile(sorted, 0.5)),
    mean_ms: round3(times.reduce((a, b) => a + b, 0) / times.length),
    p10_ms: round3(percentile(sorted, 0.1)),
    p90_ms: round3(percentile(sorted, 0.9)),
    p99_ms: round3(percentile(sorted, 0.99)),
    min_ms: round3(sorted[0]),
    max_ms: round3(sorted[sorted.length - 1]),
    load_ms: round3(loadMs),
    ort_version: ort.env.versions ? ort.env.versions.common : undefined,
    graph_optimization: opts.opt,
    cpu_per_wall: round3((cpu.user + cpu.system) / wallUs),
    loadavg_1m: round3(os.loadavg()[0]),
    inputs: inputsReport,
    outputs: outputsReport,
  };
  if (opts.profile) report.profile = opts.profile;
  process.stdout.write(JSON.stringify(report) + '\n');
  if (session.release) await session.release();
  if (profileDir) writeProfile(profileDir, opts.profile);
}

// ---------------------------------------------------------------------------------------------
// Profile

// ORT's trace in `dir` (written at release) as per-node medians in execution order, into FILE;
// then `dir` is removed.
function writeProfile(dir, file) {
  const traces = fs.readdirSync(dir);
  if (traces.length !== 1) fail(`--profile: expected one ONNX Runtime trace in ${dir}, found ${traces.length}`);
  const events = JSON.parse(fs.readFileSync(path.join(dir, traces[0]), 'utf8'));
  const nodes = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!nodes.has(name)) nodes.set(name, {op: (e.args && e.args.op_name) || '', times: []});
    nodes.get(name).times.push(e.dur);
  }
  const rows = Array.from(nodes, ([node, {op, times}]) => {
    const sorted = times.slice().sort((a, b) => a - b);
    return {node, op, median_us: percentile(sorted, 0.5), runs: times.length};
  });
  fs.writeFileSync(file, JSON.stringify(rows, null, 1) + '\n');
  fs.rmSync(dir, {recursive: true, force: true});
}

main().catch((e) => fail(e && e.stack ? e.stack.split('\n')[0] : String(e)));
