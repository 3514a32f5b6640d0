// LoRA gradients of tokenLogprobs: agree with central finite differences of the same
// forward, are unchanged by per-layer recomputation, run on wasm and cpu (LoRA-only
// training needs no gather gradient), and leak no tensors.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng.ts';
import { selectBackend } from '../../model/backend.ts';
import { loadPeftAdapter } from '../../model/lora/peft.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { loadModel, tokenLogprobs, type LogprobOptions, type Qwen3Model } from '../../model/index.ts';

const FIXTURE = join(import.meta.dirname, '../reference/fixtures/gqa');
const BATCH = [
  [5, 17, 3, 88, 41, 9, 60, 2],
  [12, 7, 96, 30, 1],
];
// Fixed per-position weights, so the loss depends on every logprob differently.
const W = tf.tidy(() => tf.tensor2d(BATCH.map((_, b) => Array.from({ length: 8 }, (_, t) => Math.sin(1 + b * 8 + t)))));

function loss(model: Qwen3Model, adapter: LoraAdapter, opts: LogprobOptions = {}): tf.Scalar {
  return tf.tidy(() => {
    const { logprobs } = tokenLogprobs(model, adapter, { inputIds: BATCH }, opts);
    const mask = tf.tensor2d(BATCH.map((s) => Array.from({ length: 8 }, (_, t) => (t < s.length ? 1 : 0))));
    return tf.sum(tf.mul(tf.mul(logprobs, W), mask)) as tf.Scalar;
  });
}

function grads(model: Qwen3Model, adapter: LoraAdapter, opts: LogprobOptions = {}): { value: number; g: Float32Array[] } {
  const { value, grads: gs } = tf.variableGrads(() => loss(model, adapter, opts), adapter.variables());
  const out = { value: value.dataSync()[0] as number, g: adapter.variables().map((v) => gs[v.name]!.dataSync() as Float32Array) };
  value.dispose();
  tf.dispose(gs);
  return out;
}

for (const backend of ['wasm', 'cpu'] as const) {
  describe(`LoRA gradients on ${backend}`, () => {
    let model: Qwen3Model;
    let adapter: LoraAdapter;
    beforeAll(async () => {
      await selectBackend(backend, () => {});
      model = await loadModel(FIXTURE);
      adapter = loadPeftAdapter(join(FIXTURE, 'adapter'), model);
    });
    afterAll(() => {
      adapter.dispose();
      model.dispose();
    });

    it('match central finite differences along a random direction', () => {
      const before = tf.memory().numTensors;
      const { g } = grads(model, adapter);
      const rng = new Rng(11);
      // Direction: the gradient's own direction plus an equal-norm random one, so the
      // directional derivative is large (a real signal) yet not aligned by construction.
      const gNorm = Math.sqrt(g.reduce((s, x) => s + x.reduce((a, v) => a + v * v, 0), 0));
      const noise = g.map((x) => Float32Array.from(x, () => rng.normal()));
      const nNorm = Math.sqrt(noise.reduce((s, d) => s + d.reduce((a, v) => a + v * v, 0), 0));
      const dirs = g.map((x, i) => Float32Array.from(x, (v, k) => v / gNorm + noise[i]![k]! / nNorm));
      const norm = Math.sqrt(dirs.reduce((s, d) => s + d.reduce((a, v) => a + v * v, 0), 0));
      const vars = adapter.variables();
      const originals = vars.map((v) => v.dataSync().slice() as Float32Array);
      const eps = 1e-2;
      const shifted = (sign: number): number => {
        tf.tidy(() =>
          vars.forEach((v, i) =>
            v.assign(
              tf.tensor(
                originals[i]!.map((x, k) => x + (sign * eps * dirs[i]![k]!) / norm),
                v.shape,
              ),
            ),
          ),
        );
        const l = loss(model, adapter);
        const out = l.dataSync()[0] as number;
        l.dispose();
        return out;
      };
      const fd = (shifted(1) - shifted(-1)) / (2 * eps);
      tf.tidy(() => vars.forEach((v, i) => v.assign(tf.tensor(originals[i]!, v.shape))));
      const analytic = g.reduce((s, gi, i) => s + gi.reduce((a, x, k) => a + (x * dirs[i]![k]!) / norm, 0), 0);
      expect(Math.abs(analytic)).toBeGreaterThan(0.1); // a real signal, not 0 ~ 0
      expect(Math.abs(fd - analytic) / Math.abs(analytic)).toBeLessThan(1e-2);
      expect(tf.memory().numTensors).toBe(before);
    });

    it('are the same with per-layer recomputation, also with training dropout', () => {
      const before = tf.memory().numTensors;
      for (const opts of [{}, { training: true, dropoutSeed: 3 }]) {
        const plain = grads(model, adapter, opts);
        const re = grads(model, adapter, { ...opts, recompute: true });
        expect(re.value).toBeCloseTo(plain.value, 4);
        plain.g.forEach((gi, i) => gi.forEach((x, k) => expect(Math.abs(x - re.g[i]![k]!)).toBeLessThan(1e-4 * (1 + Math.abs(x)))));
      }
      expect(tf.memory().numTensors).toBe(before);
    });

    it('recomputation holds fewer bytes between the forward and the backward', () => {
      // Bytes alive right after the forward (inside the gradient function) = what the tape
      // keeps for the backward; with recompute only each layer's input is kept.
      const heldAfterForward = (recompute: boolean): number => {
        const base = tf.memory().numBytes;
        let held = 0;
        const { value, grads: gs } = tf.variableGrads(() => {
          const l = loss(model, adapter, { recompute });
          held = tf.memory().numBytes - base;
          return l;
        }, adapter.variables());
        value.dispose();
        tf.dispose(gs);
        return held;
      };
      const plain = heldAfterForward(false);
      const re = heldAfterForward(true);
      expect(re).toBeLessThan(plain * 0.75);
    });

    it('dropout is seeded: same seed same loss, another seed another loss, off outside training', () => {
      const at = (opts: LogprobOptions) => {
        const l = loss(model, adapter, opts);
        const v = l.dataSync()[0] as number;
        l.dispose();
        return v;
      };
      const eval0 = at({});
      expect(at({ training: true, dropoutSeed: 1 })).toBe(at({ training: true, dropoutSeed: 1 }));
      expect(at({ training: true, dropoutSeed: 1 })).not.toBe(at({ training: true, dropoutSeed: 2 }));
      expect(at({ training: false, dropoutSeed: 1 })).toBe(eval0);
    });

    it('work inside optimizer.minimize and change only the LoRA variables', () => {
      const opt = tf.train.sgd(0.01);
      const before = adapter.variables().map((v) => v.dataSync().slice());
      const embed = model.weights.embed.dataSync().slice();
      opt.minimize(() => tf.neg(loss(model, adapter)) as tf.Scalar, false, adapter.variables());
      const changed = adapter.variables().filter((v, i) => v.dataSync().some((x, k) => x !== before[i]![k])).length;
      expect(changed).toBe(adapter.variables().length);
      expect(model.weights.embed.dataSync()).toEqual(embed);
      tf.tidy(() => adapter.variables().forEach((v, i) => v.assign(tf.tensor(before[i]!, v.shape))));
      opt.dispose();
    });
  });
}
