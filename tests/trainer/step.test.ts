import { describe, it, expect } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { accumulateGradients, trainStep, type PolicyBatch, type SftBatch, type StepOptions } from '../../trainer/step.ts';
import { AdamW } from '../../trainer/optim/adamw.ts';
import type { GrpoLossOptions, LossType } from '../../trainer/grpo/loss.ts';
import { bigramPolicy } from './step-fixtures.ts';
import { Rng } from '../../util/rng.ts';

await tf.setBackend('cpu');

const V = 12;
const rng = new Rng(7);
// 8 sequences of ragged length 5..9: a 2-token prompt, then a completion; mask on completion
const lens = [5, 9, 6, 7, 8, 5, 9, 6];
const inputIds = lens.map((n) => Array.from({ length: n }, () => rng.int(V)));
const completionMask = lens.map((n) => Array.from({ length: n }, (_, t) => (t >= 2 ? 1 : 0)));
const advantages = [1.2, -0.4, 0.3, -1.1, 0.9, -0.2, 0.5, -1.2];
// old logprobs slightly off the current policy so that some ratios clip
const oldLogprobs = lens.map((n) => Array.from({ length: n }, (_, t) => (t === 0 ? 0 : -Math.log(V) + (rng.next() - 0.5))));
const grpoBatch: PolicyBatch = { kind: 'policy', inputIds, completionMask, advantages, oldLogprobs };
const grpoOpts = (lossType: LossType): Omit<GrpoLossOptions, 'normalizer'> => ({ lossType, epsilon: 0.2, betaKl: 0, tisCap: null, maxCompletionLength: 16 });

const readGrads = (g: tf.Tensor[]) => g.map((t) => Array.from(t.dataSync()));

describe('accumulateGradients', () => {
  for (const lossType of ['grpo', 'dapo', 'dr_grpo'] as const) {
    it(`4 micro-batches give the full-batch gradient and loss (${lossType})`, () => {
      const policy = bigramPolicy(V, 8, 1);
      const o = { microBatchSize: 8, grpo: grpoOpts(lossType) };
      const full = accumulateGradients(policy, grpoBatch, o);
      const micro = accumulateGradients(policy, grpoBatch, { ...o, microBatchSize: 2 });
      expect(micro.microBatches).toBe(4);
      expect(micro.loss).toBeCloseTo(full.loss, 5);
      const a = readGrads(full.grads);
      const b = readGrads(micro.grads);
      a.forEach((row, i) => row.forEach((x, j) => expect(Math.abs(x - b[i]![j]!)).toBeLessThan(1e-5)));
      // clip stats sum over micro-batches as well
      expect(full.sums.lowClipped + full.sums.highClipped).toBeGreaterThan(0); // the clip is exercised
      expect(micro.sums.lowClipped + micro.sums.highClipped).toBe(full.sums.lowClipped + full.sums.highClipped);
      expect(full.sums.tokens).toBe(lens.reduce((s, n) => s + n - 2, 0));
      tf.dispose([...full.grads, ...micro.grads]);
    });
  }

  it('4 micro-batches give the full-batch SFT gradient', () => {
    const policy = bigramPolicy(V, 8, 2);
    const sft: SftBatch = { kind: 'sft', inputIds, targetMask: completionMask };
    const full = accumulateGradients(policy, sft, { microBatchSize: 8 });
    const micro = accumulateGradients(policy, sft, { microBatchSize: 2 });
    const a = readGrads(full.grads);
    const b = readGrads(micro.grads);
    a.forEach((row, i) => row.forEach((x, j) => expect(Math.abs(x - b[i]![j]!)).toBeLessThan(1e-5)));
    expect(micro.loss).toBeCloseTo(full.loss, 5);
    tf.dispose([...full.grads, ...micro.grads]);
  });

  it('rejects misaligned per-token fields and missing TIS / KL inputs with the fix', () => {
    const policy = bigramPolicy(V, 8, 3);
    const bad = { ...grpoBatch, completionMask: [[1, 1], ...completionMask.slice(1)] };
    expect(() => accumulateGradients(policy, bad, { microBatchSize: 4, grpo: grpoOpts('grpo') })).toThrow(
      /completionMask\[0\] has 2 entries but inputIds\[0\] has 5 tokens/,
    );
    expect(() => accumulateGradients(policy, grpoBatch, { microBatchSize: 4, grpo: { ...grpoOpts('grpo'), tisCap: 2 } })).toThrow(/no rolloutLogprobs/);
    expect(() => accumulateGradients(policy, { ...grpoBatch, advantages: [1] }, { microBatchSize: 4, grpo: grpoOpts('grpo') })).toThrow(
      /1 advantages for 8 sequences/,
    );
  });
});

describe('trainStep', () => {
  it('raises the logprob of the positive-advantage completion and lowers the negative one', () => {
    const policy = bigramPolicy(V, 8, 4);
    const opt = new AdamW(policy.variables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 });
    // a group of two: same prompt [3, 5], completions [7, 8] (A = +1) and [9, 10] (A = -1)
    const group: PolicyBatch = {
      kind: 'policy',
      inputIds: [
        [3, 5, 7, 8],
        [3, 5, 9, 10],
      ],
      completionMask: [
        [0, 0, 1, 1],
        [0, 0, 1, 1],
      ],
      advantages: [1, -1],
    };
    const seqLogp = () =>
      tf.tidy(() =>
        Array.from(
          tf
            .sum(tf.mul(policy.score(group.inputIds, { training: false, recompute: false, withEntropy: false }).logprobs, tf.tensor2d(group.completionMask)), 1)
            .dataSync(),
        ),
      );
    const [pos0, neg0] = seqLogp();
    const m = trainStep(policy, opt, group, { lr: 0.05, microBatchSize: 1, maxGradNorm: 1, grpo: grpoOpts('grpo'), withEntropy: true });
    const [pos1, neg1] = seqLogp();
    expect(pos1!).toBeGreaterThan(pos0!);
    expect(neg1!).toBeLessThan(neg0!);
    // on-policy (no oldLogprobs): ratio 1, so the loss is -mean(A) = 0 and nothing clips
    expect(m.loss).toBeCloseTo(0, 6);
    expect(m['clip_ratio/region_mean']).toBe(0);
    expect(m.grad_norm).toBeGreaterThan(0);
    expect(m.entropy).toBeGreaterThan(0);
    expect(m.entropy).toBeLessThanOrEqual(Math.log(V) + 1e-5);
    expect(m.num_tokens).toBe(8);
    expect(m.loss_tokens).toBe(4);
  });

  it('leaks no tensors across steps', () => {
    const policy = bigramPolicy(V, 8, 5);
    const opt = new AdamW(policy.variables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 });
    const o: StepOptions = { lr: 1e-2, microBatchSize: 3, maxGradNorm: 1, grpo: grpoOpts('dapo'), withEntropy: true };
    trainStep(policy, opt, grpoBatch, o);
    const before = tf.memory().numTensors;
    trainStep(policy, opt, grpoBatch, o);
    trainStep(policy, opt, { ...grpoBatch, oldLogprobs: undefined }, o);
    trainStep(policy, opt, { kind: 'sft', inputIds, targetMask: completionMask }, { ...o, grpo: undefined });
    expect(tf.memory().numTensors).toBe(before);
  });
});
