// ONNX Runtime's CPU latency for one ONNX file: the baseline of zoo_bench.
// usage: node bench/ort_latency.js MODEL.onnx THREADS REPS SHAPE[;SHAPE...] [OUTPUT.f32]
//   SHAPE: an input's dims, e.g. 1x3x224x224 (one per input, in the model's order), float32 with
//   element k sin(k); or TYPE:DIMS for an integer input (int64:1x128: token ids, masks), every
//   element 1. OUTPUT.f32: where to write the first output's values (raw float32), for zoo_bench
//   to compare with Loom's.
// Loads onnxruntime-node from $LOOM_ORT_DIR/node_modules (scripts/bootstrap.sh installs it into
// build/ort), else from Node's usual search path. Prints one JSON line: the median of REPS runs
// after 5 warm-ups, in milliseconds (graph optimizations 'all', intra-op threads THREADS).
'use strict';
const path = require('path');
const dir = process.env.LOOM_ORT_DIR;
const ort = require(dir ? path.join(dir, 'node_modules', 'onnxruntime-node') : 'onnxruntime-node');

async function main() {
  const [model, threads, reps, shapes, outFile] =
      [process.argv[2], +process.argv[3], +process.argv[4], process.argv[5], process.argv[6]];
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all'});
  const feeds = {};
  shapes.split(';').forEach((s, i) => {
    const typed = s.includes(':') ? s.split(':') : ['float32', s];
    const dims = typed[1].split('x').map(Number);
    const count = dims.reduce((a, b) => a * b, 1);
    let data;
    if (typed[0] === 'int64') {
      data = new BigInt64Array(count).fill(1n);
    } else if (typed[0] === 'int32') {
      data = new Int32Array(count).fill(1);
    } else {
      data = new Float32Array(count);
      for (let k = 0; k < count; ++k) data[k] = Math.sin(k);
    }
    feeds[session.inputNames[i]] = new ort.Tensor(typed[0], data, dims);
  });
  const times = [];
  for (let r = 0; r < 5 + reps; ++r) {
    const t0 = process.hrtime.bigint();
    const results = await session.run(feeds);
    if (r === 0 && outFile) {
      const first = results[session.outputNames[0]].data;
      require('fs').writeFileSync(outFile, Buffer.from(first.buffer, first.byteOffset, first.byteLength));
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r >= 5) times.push(ms);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({model, threads, median_ms: times[times.length >> 1], min_ms: times[0],
                              ort: require(path.join(require.resolve(dir ? path.join(dir, 'node_modules', 'onnxruntime-node') : 'onnxruntime-node'), '..', '..', 'package.json')).version}));
}
main().catch((e) => { console.error(e.message); process.exit(1); });
