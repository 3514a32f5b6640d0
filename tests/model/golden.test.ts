// The tfjs Qwen3 forward against the independent NumPy reference (tests/reference/qwen3_ref.py):
// per-token logprobs and entropies with and without a PEFT adapter, on the wasm and cpu
// backends, batched (ragged, right-padded) and through the KV cache.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../model/backend.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { createKvCache, forwardStep, loadModel, tokenLogprobs, type Qwen3Model } from '../../model/index.ts';
import { FIXTURES, loadFixture, readExpected } from './reference-fixture.ts';

/** Max |a - b| over the real (unpadded) positions of each row. */
function maxDiff(got: number[][], want: number[][]): number {
  let m = 0;
  want.forEach((row, b) => row.forEach((v, t) => (m = Math.max(m, Math.abs((got[b]?.[t] ?? NaN) - v)))));
  return Number.isNaN(m) ? Infinity : m;
}

function logSoftmaxAt(logits: Float32Array, id: number): number {
  let mx = -Infinity;
  for (const x of logits) if (x > mx) mx = x;
  let s = 0;
  for (const x of logits) s += Math.exp(x - mx);
  return (logits[id] as number) - mx - Math.log(s);
}

for (const backend of ['wasm', 'cpu'] as const) {
  describe.each(['tiny', 'gqa'])(`Qwen3 forward on ${backend}: fixture %s`, (name) => {
    const expected = readExpected(name);
    let model: Qwen3Model;
    let adapter: LoraAdapter;

    beforeAll(async () => {
      ({ model, adapter } = await loadFixture(backend, name));
    });
    afterAll(() => {
      adapter?.dispose();
      model?.dispose();
    });

    it.each([
      ['base', false],
      ['adapter', true],
    ] as const)('tokenLogprobs matches the reference (%s) within 1e-4, batched and ragged', (key, withAdapter) => {
      const before = tf.memory().numTensors;
      const { logprobs, entropy } = tokenLogprobs(model, withAdapter ? adapter : null, { inputIds: expected.inputs }, { withEntropy: true });
      expect(logprobs.shape).toEqual([expected.inputs.length, Math.max(...expected.inputs.map((s) => s.length))]);
      expect(maxDiff(logprobs.arraySync(), expected[key].logprobs)).toBeLessThan(1e-4);
      expect(maxDiff(entropy!.arraySync(), expected[key].entropy)).toBeLessThan(1e-4);
      logprobs.dispose();
      entropy!.dispose();
      expect(tf.memory().numTensors).toBe(before);
    });

    it('the adapter changes the logprobs (the fixture is not a no-op)', () => {
      expect(maxDiff(expected.adapter.logprobs, expected.base.logprobs)).toBeGreaterThan(0.05);
    });

    it('forwardStep (prefill, then one token at a time) matches the reference', () => {
      const before = tf.memory().numTensors;
      for (const ids of expected.inputs.filter((s) => s.length >= 2)) {
        const b = expected.inputs.indexOf(ids);
        const cache = createKvCache(model);
        const split = Math.max(1, Math.floor(ids.length / 2));
        let logits = forwardStep(model, adapter, cache, ids.slice(0, split));
        expect(logits.length).toBe(model.config.vocabSize);
        for (let t = split; t < ids.length; t++) {
          // The reference scores ids outside a vocab map as unk (see vocab-map.ts).
          const id = model.vocab && (model.vocab.rowOf[ids[t] as number] as number) < 0 ? model.vocab.unkId : (ids[t] as number);
          expect(Math.abs(logSoftmaxAt(logits, id) - (expected.adapter.logprobs[b]?.[t] as number))).toBeLessThan(1e-4);
          logits = forwardStep(model, adapter, cache, [ids[t] as number]);
        }
        expect(cache.length).toBe(ids.length);
        cache.dispose();
      }
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}

describe('trimmed output vocabulary (tiny fixture)', () => {
  it('ids outside vocab_map.json get -Infinity logits; kept ids are finite', async () => {
    await selectBackend('wasm', () => {});
    const model = await loadModel(join(FIXTURES, 'tiny'));
    const logits = forwardStep(model, null, createKvCache(model), [151644, 872]);
    const kept = new Set(model.vocab!.keptIds);
    expect(kept.size).toBe(model.rows);
    let keptFinite = 0;
    let otherNegInf = 0;
    logits.forEach((v, id) => {
      if (kept.has(id) && Number.isFinite(v)) keptFinite++;
      if (!kept.has(id) && v === -Infinity) otherNegInf++;
    });
    expect(keptFinite).toBe(kept.size);
    expect(otherNegInf).toBe(model.config.vocabSize - kept.size);
    model.dispose();
  });
});
