// One batched decode step of model/batch-step.ts (no HTTP, no sampling): how the
// step time grows with the number of sequences, at a given context length (not part of
// npm test). Usage:
//   node --import tsx bench/serve/decode-step.ts [--model models/tiny-demo] [--context 50,350,1000] [--backend wasm]
// Per context length: B = 1, 2, 4, 8 sequences prefilled to that length, then decode steps
// (one id each) in rounds; the median step time over the rounds, and tokens/s against B = 1
// in the same run. What it isolates: the batched row-wise work (shared by B) vs the
// attention (per sequence, the decode pool's scalar-loop matmuls grow with B x context).
import { parseArgs } from 'node:util';
import { selectBackend, type BackendKind } from '../../model/backend.ts';
import { forwardBatch } from '../../model/batch-step.ts';
import { createKvCache, loadModel, type KvCache } from '../../model/index.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/tiny-demo' },
    context: { type: 'string', default: '50,350,1000' },
    backend: { type: 'string', default: 'wasm' },
  },
});
await selectBackend(values.backend as BackendKind, () => {});
const model = await loadModel(values.model as string);
const kept = model.vocab?.keptIds;
const idAt = (r: number) => (kept ? (kept[r % model.rows] as number) : r % model.rows);
const BS = [1, 2, 4, 8];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

function prefilled(B: number, L: number): KvCache[] {
  return Array.from({ length: B }, (_, i) => {
    const c = createKvCache(model);
    forwardBatch(model, [{ cache: c, adapter: null, ids: Array.from({ length: L }, (_, t) => idAt(7 * t + i)), logits: false }], 64);
    return c;
  });
}

console.log(`\nbatched decode step on ${values.model} (${values.backend}), median of 4 rounds x 10 steps\n`);
console.log('| context | B | ms / step | tokens/s | vs B = 1 |');
console.log('|---|---|---|---|---|');
for (const L of (values.context as string).split(',').map(Number)) {
  const times: number[][] = BS.map(() => []);
  // rounds interleave the batch sizes (a shared machine drifts); each round starts fresh sequences
  for (let round = 0; round < 4; round++) {
    BS.forEach((B, j) => {
      const caches = prefilled(B, L);
      for (let s = 0; s < 12; s++) {
        const t0 = performance.now();
        forwardBatch(
          model,
          caches.map((cache) => ({ cache, adapter: null, ids: [idAt(s)], logits: true })),
          64,
        );
        if (s >= 2) times[j]!.push(performance.now() - t0);
      }
      caches.forEach((c) => c.dispose());
    });
  }
  const base = BS[0]! / median(times[0]!);
  BS.forEach((B, j) => {
    const ms = median(times[j]!);
    console.log(`| ${L} | ${B} | ${ms.toFixed(2)} | ${((1000 * B) / ms).toFixed(0)} | ${(B / ms / base).toFixed(2)}x |`);
  });
}
model.dispose();
