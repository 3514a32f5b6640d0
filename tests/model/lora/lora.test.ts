// createLora (PEFT init), the no-op property of a fresh adapter, and mergeLora.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoraSchema } from '../../../configs/schema.ts';
import { selectBackend } from '../../../model/backend.ts';
import { createLora } from '../../../model/lora/lora.ts';
import { mergeLora } from '../../../model/lora/merge.ts';
import { loadPeftAdapter } from '../../../model/lora/peft.ts';
import { PROJ_NAMES } from '../../../model/lora/types.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../../model/index.ts';

const FIXTURE = join(import.meta.dirname, '../../reference/fixtures/gqa');
const BATCH = [
  [3, 50, 12, 77, 8, 19],
  [90, 4, 4],
];

describe('LoRA adapters', () => {
  let model: Qwen3Model;
  beforeAll(async () => {
    await selectBackend('wasm', () => {});
    model = await loadModel(FIXTURE);
  });
  afterAll(() => model.dispose());

  it('createLora follows PEFT init: A ~ U(-1/sqrt(in), 1/sqrt(in)), B = 0, seeded', () => {
    const cfg = LoraSchema.parse({}); // the paper's r 8, alpha 16, all seven projections
    const a = createLora(model, cfg, 42);
    const b = createLora(model, cfg, 42);
    const c = createLora(model, cfg, 43);
    expect(a.scaling).toBe(2);
    expect(a.variables().length).toBe(model.config.numHiddenLayers * PROJ_NAMES.length * 2);
    for (let i = 0; i < model.config.numHiddenLayers; i++)
      for (const m of PROJ_NAMES) {
        const { A, B } = a.pair(i, m)!;
        const inF = A.shape[1] as number;
        const values = A.dataSync() as Float32Array;
        expect(A.shape[0]).toBe(8);
        expect(Math.max(...values.map(Math.abs))).toBeLessThanOrEqual(1 / Math.sqrt(inF));
        // uniform on [-b, b] has std b/sqrt(3); 8*in samples: loose 25% band
        const std = Math.sqrt(values.reduce((s: number, x: number) => s + x * x, 0) / values.length);
        expect(std).toBeGreaterThan(0.75 / Math.sqrt(inF) / Math.sqrt(3));
        expect(std).toBeLessThan(1.25 / Math.sqrt(inF) / Math.sqrt(3));
        expect(B.dataSync().every((x) => x === 0)).toBe(true);
        expect(b.pair(i, m)!.A.dataSync()).toEqual(values);
        expect(c.pair(i, m)!.A.dataSync()).not.toEqual(values);
      }
    [a, b, c].forEach((x) => x.dispose());
  });

  it('a fresh adapter leaves the logprobs unchanged; only targeted modules get pairs', () => {
    const lora = createLora(model, { r: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'down_proj'] }, 1);
    expect(lora.pair(0, 'q_proj')).toBeDefined();
    expect(lora.pair(0, 'k_proj')).toBeUndefined();
    const base = tokenLogprobs(model, null, { inputIds: BATCH }).logprobs;
    const withLora = tokenLogprobs(model, lora, { inputIds: BATCH }).logprobs;
    expect(withLora.arraySync()).toEqual(base.arraySync());
    tf.dispose([base, withLora]);
    lora.dispose();
  });

  it('mergeLora: the merged weights give the same logprobs as base + adapter', () => {
    const adapter = loadPeftAdapter(join(FIXTURE, 'adapter'), model);
    const merged = mergeLora(model, adapter);
    const viaAdapter = tokenLogprobs(model, adapter, { inputIds: BATCH }).logprobs;
    const viaMerged = tokenLogprobs(merged, null, { inputIds: BATCH }).logprobs;
    const base = tokenLogprobs(model, null, { inputIds: BATCH }).logprobs;
    const diff = tf.max(tf.abs(tf.sub(viaAdapter, viaMerged))).dataSync()[0]!;
    const effect = tf.max(tf.abs(tf.sub(viaAdapter, base))).dataSync()[0]!;
    expect(diff).toBeLessThan(1e-4);
    expect(effect).toBeGreaterThan(0.05);
    tf.dispose([viaAdapter, viaMerged, base]);
    merged.dispose();
    adapter.dispose();
    // the base model still works after the merged copy is gone
    const again = tokenLogprobs(model, null, { inputIds: BATCH }).logprobs;
    expect(again.shape).toEqual([2, 6]);
    again.dispose();
  });
});
