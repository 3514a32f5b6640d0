// The train step over the real tfjs Qwen3 forward + LoRA (a tiny random model).
import { describe, it, expect } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { accumulateGradients, trainStep, type PolicyBatch } from '../../trainer/step.ts';
import { AdamW } from '../../trainer/optim/adamw.ts';
import { createLora } from '../../model/lora/lora.ts';
import { loraPolicy, scoreRows } from '../../trainer/policy-lora.ts';
import { LoraSchema } from '../../configs/schema.ts';
import type { Qwen3Config } from '../../model/config.ts';
import { randomQwen3 } from './step-fixtures.ts';
import { Rng } from '../../util/rng.ts';

await tf.setBackend('cpu');

const cfg: Qwen3Config = {
  vocabSize: 48,
  hiddenSize: 32,
  intermediateSize: 64,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 128,
};
const model = randomQwen3(cfg, 11);
const rng = new Rng(3);
const lens = [6, 9, 7, 8];
const inputIds = lens.map((n) => Array.from({ length: n }, () => rng.int(cfg.vocabSize)));
const completionMask = lens.map((n) => Array.from({ length: n }, (_, t) => (t >= 3 ? 1 : 0)));
const batch: PolicyBatch = { kind: 'policy', inputIds, completionMask, advantages: [1, -1, 0.5, -0.5] };
const grpo = { lossType: 'grpo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };

/** LoRA with a nonzero B so every A and B gets a gradient from the first step. */
function adapter(dropout: number, seed: number) {
  const a = createLora(model, LoraSchema.parse({ dropout }), seed);
  const r = new Rng(seed + 1);
  for (const v of a.variables())
    if (v.name.endsWith('lora_B'))
      v.assign(
        tf.tensor(
          Float32Array.from({ length: v.size }, () => r.normal() * 0.05),
          v.shape,
        ),
      );
  return a;
}
const maxDiff = (a: tf.Tensor[], b: tf.Tensor[]) => Math.max(...a.map((t, i) => tf.tidy(() => tf.max(tf.abs(tf.sub(t, b[i]!))).dataSync()[0]!)));

describe('train step on the tfjs Qwen3 + LoRA', () => {
  it('accumulating 4 micro-batches equals the single-batch gradient (1e-5)', () => {
    const a = adapter(0, 1);
    const p = loraPolicy(model, a);
    const full = accumulateGradients(p, batch, { microBatchSize: 4, grpo });
    const micro = accumulateGradients(p, batch, { microBatchSize: 1, grpo });
    expect(micro.microBatches).toBe(4);
    expect(maxDiff(full.grads, micro.grads)).toBeLessThan(1e-5);
    expect(Math.max(...full.grads.map((g) => tf.tidy(() => tf.max(tf.abs(g)).dataSync()[0]!)))).toBeGreaterThan(1e-4);
    tf.dispose([...full.grads, ...micro.grads]);
    a.dispose();
  });

  it('recompute on and off give the same gradients, with LoRA dropout on (same seed)', () => {
    const a = adapter(0.05, 2);
    const p = loraPolicy(model, a);
    const o = { microBatchSize: 2, grpo, dropoutSeed: 99 };
    const off = accumulateGradients(p, batch, { ...o, recompute: false });
    const on = accumulateGradients(p, batch, { ...o, recompute: true });
    expect(maxDiff(off.grads, on.grads)).toBeLessThan(1e-5);
    expect(on.loss).toBeCloseTo(off.loss, 6);
    tf.dispose([...off.grads, ...on.grads]);
    a.dispose();
  });

  it('one GRPO step raises the positive completion and lowers the negative one; no tensor leaks', () => {
    const a = createLora(model, LoraSchema.parse({ dropout: 0 }), 3); // PEFT init: B = 0
    const p = loraPolicy(model, a);
    const opt = new AdamW(a.variables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 });
    const group: PolicyBatch = {
      kind: 'policy',
      inputIds: [
        [5, 6, 7, 8, 9],
        [5, 6, 7, 10, 11],
      ],
      completionMask: [
        [0, 0, 0, 1, 1],
        [0, 0, 0, 1, 1],
      ],
      advantages: [1, -1],
    };
    const seqLogp = () => scoreRows(model, a, group.inputIds, 2).map((r) => r[3]! + r[4]!);
    const [pos0, neg0] = seqLogp();
    const o = { lr: 1e-2, microBatchSize: 1, maxGradNorm: 1, grpo, withEntropy: true, recompute: true };
    const m = trainStep(p, opt, group, o);
    const [pos1, neg1] = seqLogp();
    expect(pos1!).toBeGreaterThan(pos0!);
    expect(neg1!).toBeLessThan(neg0!);
    expect(m.entropy).toBeGreaterThan(0);
    const before = tf.memory().numTensors;
    trainStep(p, opt, group, o);
    trainStep(p, opt, group, { ...o, recompute: false });
    expect(tf.memory().numTensors).toBe(before);
    opt.dispose();
    a.dispose();
  });

  it('3 updates == 2 updates + restore (adapter values, optimizer state) into fresh objects + 1 update, bitwise', () => {
    const o = (step: number) => ({ lr: 1e-2, microBatchSize: 2, maxGradNorm: 1, grpo, dropoutSeed: 1000 + step, recompute: step % 2 === 1 });
    const optOf = (vars: tf.Variable[]) => new AdamW(vars, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 });
    const a = createLora(model, LoraSchema.parse({ dropout: 0.05 }), 9);
    const optA = optOf(a.variables());
    for (let k = 0; k < 3; k++) trainStep(loraPolicy(model, a), optA, batch, o(k));

    const b = createLora(model, LoraSchema.parse({ dropout: 0.05 }), 9);
    const optB = optOf(b.variables());
    for (let k = 0; k < 2; k++) trainStep(loraPolicy(model, b), optB, batch, o(k));
    const savedVars = b.variables().map((v) => Float32Array.from(v.dataSync() as Float32Array));
    const savedOpt = optB.state();

    const c = createLora(model, LoraSchema.parse({ dropout: 0.05 }), 123); // different init, overwritten
    c.variables().forEach((v, i) => v.assign(tf.tensor(savedVars[i]!, v.shape)));
    const optC = optOf(c.variables());
    optC.load(savedOpt);
    trainStep(loraPolicy(model, c), optC, batch, o(2));
    const va = a.variables();
    c.variables().forEach((v, i) => expect(Array.from(v.dataSync())).toEqual(Array.from(va[i]!.dataSync())));
    [optA, optB, optC].forEach((x) => x.dispose());
    [a, b, c].forEach((x) => x.dispose());
  });

  it('scoreRows returns the unpadded per-token logprobs of tokenLogprobs', () => {
    const a = adapter(0, 4);
    const rows = scoreRows(model, a, inputIds, 3);
    expect(rows.map((r) => r.length)).toEqual(lens);
    const single = scoreRows(model, a, [inputIds[1]!], 1)[0]!;
    single.forEach((x, t) => expect(rows[1]![t]!).toBeCloseTo(x, 5));
    a.dispose();
  });
});
