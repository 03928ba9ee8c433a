// ONNX Runtime's greedy token generation on a decoder with a key/value cache: the baseline of
// generate_bench. The loop users write with onnxruntime-node: the prompt with empty past
// tensors, then one step per token, each step's present key/values fed back as the next past.
// usage: node bench/ort_generate.js MODEL.onnx THREADS PROMPT_IDS NEW_TOKENS REPS EMPTY_PAST
//   PROMPT_IDS: comma-separated token ids. REPS: whole generations timed (after one warm-up).
//   EMPTY_PAST: a past input's shape with the cache axis 0, e.g. 1x2x0x16.
// Loads onnxruntime-node from $LOOM_ORT_DIR/node_modules, else Node's usual search path. Prints
// one JSON line: the tokens; the prompt step's and the decode steps' median milliseconds over the
// timed generations (a decode step's median over all steps of all generations).
'use strict';
const path = require('path');
const dir = process.env.LOOM_ORT_DIR;
const pkg = dir ? path.join(dir, 'node_modules', 'onnxruntime-node') : 'onnxruntime-node';
const ort = require(pkg);

function median(a) {
  const s = [...a].sort((x, y) => x - y);
  return s[s.length >> 1];
}

async function main() {
  const [model, threads, promptText, newTokens, reps, emptyPast] =
      [process.argv[2], +process.argv[3], process.argv[4], +process.argv[5], +process.argv[6], process.argv[7]];
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all'});
  const prompt = promptText.split(',').map(BigInt);
  const pastNames = session.inputNames.filter((n) => n !== 'input_ids');
  const presentOf = (n) => n.replace('past_key_values', 'present');
  const emptyDims = emptyPast.split('x').map(Number);
  let tokens = [], prefill = [], steps = [];
  for (let r = 0; r < 1 + reps; ++r) {
    let feeds = {input_ids: new ort.Tensor('int64', BigInt64Array.from(prompt), [1, prompt.length])};
    for (const n of pastNames) feeds[n] = new ort.Tensor('float32', new Float32Array(0), emptyDims);
    tokens = [];
    for (let s = 0; s < newTokens; ++s) {
      const t0 = process.hrtime.bigint();
      const out = await session.run(feeds);
      const logits = out.logits, vocab = logits.dims[2], rows = logits.dims[1];
      let best = 0;
      for (let v = 1; v < vocab; ++v)
        if (logits.data[(rows - 1) * vocab + v] > logits.data[(rows - 1) * vocab + best]) best = v;
      tokens.push(best);
      feeds = {input_ids: new ort.Tensor('int64', BigInt64Array.from([BigInt(best)]), [1, 1])};
      for (const n of pastNames) feeds[n] = out[presentOf(n)];
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r > 0) (s === 0 ? prefill : steps).push(ms);
    }
  }
  const version = require(path.join(require.resolve(pkg), '..', '..', 'package.json')).version;
  console.log(JSON.stringify({model, threads, tokens, prefill_ms: median(prefill), step_ms: median(steps), ort: version}));
}
main().catch((e) => { console.error(e.message); process.exit(1); });
