// Every GRPO variant, PPO's actor and SFT through the Tinker contract (trainer/update/: the
// mapping onto Tinker's built-in losses, or the linear surrogate) on gsteer's engine equal the
// in-process step's gradient (trainer/step.ts accumulateGradients) within 1e-6 relative (global
// L2 over the adapter's variables), on the tfjs Qwen3 + LoRA, cpu backend; the built-in ones
// without TIS to the bit (the advantages are rounded as the step's backward rounds them). The batch has ragged
// rows sharing prefixes, a zero advantage, two trajectories of two turns, and logprobs off the
// current policy by up to +-0.35 so that the clip and the TIS cap bind on some tokens.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { LoraSchema } from '../../../configs/schema.ts';
import { createLora } from '../../../model/lora/lora.ts';
import { TfjsEngine } from '../../../trainer/engine/tfjs-engine.ts';
import { loraPolicy, scoreRows } from '../../../trainer/policy-lora.ts';
import { accumulateGradients, type PolicyBatch, type StepOptions, type TrainBatch } from '../../../trainer/step.ts';
import { contractForwardBackward } from '../../../trainer/update/contract-step.ts';
import { policyPlan } from '../../../trainer/update/policy-plan.ts';
import type { PolicyLossOptions } from '../../../trainer/update/policy-terms.ts';
import { Rng } from '../../../util/rng.ts';
import { randomQwen3, TINY_QWEN3 } from '../step-fixtures.ts';

await tf.setBackend('cpu');

const cfg = TINY_QWEN3;
const model = randomQwen3(cfg, 11);
const rng = new Rng(3);
const ints = (n: number) => Array.from({ length: n }, () => rng.int(cfg.vocabSize));
// 6 turns: a shared 4-token system prefix; turns 2k and 2k+1 are trajectory k's (the second turn extends the first)
const sys = ints(4);
const t0 = [...sys, ...ints(5)];
const t1 = [...sys, ...ints(3)];
const t2 = [...sys, ...ints(6)];
const inputIds = [t0, [...t0, ...ints(4)], t1, [...t1, ...ints(5)], t2, [...t2, ...ints(2)]];
const prompt = [6, 11, 5, 9, 7, 11];
const completionMask = inputIds.map((s, b) => s.map((_, t) => (t >= prompt[b]! ? 1 : 0)));
const advantages = [0.9, 0.9, -1.1, -1.1, 0, 0];
const trajectories = [0, 0, 1, 1, 2, 2];

/** LoRA with a nonzero B (every A and B gets a gradient at once). */
function adapter(dropout: number) {
  const a = createLora(model, LoraSchema.parse({ r: 4, alpha: 8, dropout }), 1);
  const r = new Rng(2);
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
const current = scoreRows(model, adapter(0), inputIds, 6);
const jitter = (seed: number, scale: number) => {
  const r = new Rng(seed);
  return current.map((row, b) => row.map((x, t) => (completionMask[b]![t] ? x + (r.next() - 0.5) * 2 * scale : 0)));
};
// logp_old = current - d: rho = e^d; d = 0.22 puts rho at 1.246, clipped by epsilon 0.2 but not by epsilonHigh 0.28
const SHIFTS = [0.22, -0.3, 0.05, 0.3, -0.24, 0.1];
const old = current.map((row, b) => row.map((x, t) => (completionMask[b]![t] ? x - SHIFTS[t % SHIFTS.length]! : 0)));
const base: PolicyBatch = { kind: 'policy', inputIds, completionMask, advantages, trajectories };
const policy = (o: Partial<PolicyLossOptions>): PolicyLossOptions => ({
  lossType: 'grpo',
  aggregation: 'turn',
  epsilon: 0.2,
  betaKl: 0,
  tisCap: null,
  maxCompletionLength: 16,
  ...o,
});

interface Variant {
  name: string;
  batch: TrainBatch;
  grpo?: PolicyLossOptions;
  plan?: 'builtin' | 'surrogate';
  dropout?: number;
  step?: Partial<StepOptions>;
}

export const VARIANTS: Variant[] = [
  { name: 'grpo, turn, on-policy: cross_entropy, weights A c', batch: base, grpo: policy({}), plan: 'builtin' },
  { name: 'grpo, trajectory, on-policy', batch: base, grpo: policy({ aggregation: 'trajectory' }), plan: 'builtin' },
  { name: 'dapo (token mean), on-policy', batch: base, grpo: policy({ lossType: 'dapo' }), plan: 'builtin' },
  { name: 'bnpo, trajectory, on-policy', batch: base, grpo: policy({ lossType: 'bnpo', aggregation: 'trajectory' }), plan: 'builtin' },
  { name: 'dr_grpo, trajectory, on-policy', batch: base, grpo: policy({ lossType: 'dr_grpo', aggregation: 'trajectory' }), plan: 'builtin' },
  {
    name: 'grpo, trajectory, off-policy, clip 0.2 / 0.28: ppo',
    batch: { ...base, oldLogprobs: old },
    grpo: policy({ aggregation: 'trajectory', epsilonHigh: 0.28 }),
    plan: 'builtin',
  },
  {
    name: 'dr_grpo, off-policy, TIS with old != rollout: ppo with the fixed weight',
    batch: { ...base, oldLogprobs: old, rolloutLogprobs: jitter(5, 0.35) },
    grpo: policy({ lossType: 'dr_grpo', tisCap: 1.2 }),
    plan: 'builtin',
  },
  { name: 'grpo, on-policy, TIS: surrogate', batch: { ...base, rolloutLogprobs: jitter(5, 0.35) }, grpo: policy({ tisCap: 1.1 }), plan: 'surrogate' },
  {
    name: 'grpo, trajectory, on-policy, k3 KL 0.1: surrogate',
    batch: { ...base, refLogprobs: jitter(6, 0.35) },
    grpo: policy({ aggregation: 'trajectory', betaKl: 0.1 }),
    plan: 'surrogate',
  },
  {
    name: 'dapo, off-policy, KL 0.05 + TIS: surrogate',
    batch: { ...base, oldLogprobs: old, rolloutLogprobs: jitter(5, 0.3), refLogprobs: jitter(6, 0.35) },
    grpo: policy({ lossType: 'dapo', betaKl: 0.05, tisCap: 1.3 }),
    plan: 'surrogate',
  },
  {
    name: 'grpo, LoRA dropout 0.1, micro-batches of 2, prefix grouping, on-policy TIS: surrogate',
    batch: { ...base, rolloutLogprobs: jitter(5, 0.35) },
    grpo: policy({ tisCap: 1.1 }),
    plan: 'surrogate',
    dropout: 0.1,
    step: { microBatchSize: 2, prefixGrouping: true, dropoutSeed: 77 },
  },
  {
    name: 'grpo, dropout 0.1, micro-batches of 4, prefix grouping, on-policy',
    batch: base,
    grpo: policy({}),
    plan: 'builtin',
    dropout: 0.1,
    step: { microBatchSize: 4, prefixGrouping: true, dropoutSeed: 5 },
  },
  {
    name: "PPO's actor: per-token advantages, dapo, old logprobs: ppo",
    batch: {
      ...base,
      advantages: base.advantages.map(() => 0),
      tokenAdvantages: jitter(7, 1.5).map((r, b) => r.map((x, t) => (completionMask[b]![t] ? x - current[b]![t]! : 0))),
      oldLogprobs: old,
    },
    grpo: policy({ lossType: 'dapo' }),
    plan: 'builtin',
  },
  { name: 'SFT: cross_entropy, weights mask / tokens', batch: { kind: 'sft', inputIds, targetMask: completionMask } },
];

const norm = (a: number[][]) => Math.sqrt(a.flat().reduce((s, x) => s + x * x, 0));
const relDiff = (a: number[][], b: number[][]) => norm(a.map((r, i) => r.map((x, j) => x - b[i]![j]!))) / norm(b);

/** The in-process gradient and the contract's, of the same adapter. */
export async function bothGradients(v: Variant): Promise<{ ref: number[][]; contract: number[][]; refLoss: number; loss: number; clipped: number }> {
  const a = adapter(v.dropout ?? 0);
  const o = { microBatchSize: 3, ...v.step, ...(v.grpo ? { grpo: v.grpo } : {}) };
  const acc = accumulateGradients(loraPolicy(model, a), v.batch, o);
  const ref = acc.grads.map((g) => Array.from(g.dataSync()));
  tf.dispose(acc.grads);
  const engine = new TfjsEngine(model, a, { baseModel: 'tiny', microBatchSize: o.microBatchSize });
  const r = await contractForwardBackward(engine, v.batch, {
    ...o,
    lr: 1e-3,
    maxGradNorm: 1,
    adam: { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 },
    extensions: true,
  });
  const contract = engine.gradients()!.map((g) => Array.from(g.dataSync()));
  engine.dispose();
  return { ref, contract, refLoss: acc.loss, loss: r.loss, clipped: acc.sums.lowClipped + acc.sums.highClipped };
}

describe('the Tinker mapping: gradient through the contract = the in-process step', () => {
  it('the off-policy batch exercises both clip sides and the band between epsilon and epsilonHigh', () => {
    const rho = old.map((row, b) => row.map((x, t) => (completionMask[b]![t] ? Math.exp(current[b]![t]! - x) : 1)));
    const band = rho.flatMap((r, b) => r.filter((x) => advantages[b]! > 0 && x > 1.2 && x <= 1.28));
    const low = rho.flatMap((r, b) => r.filter((x) => advantages[b]! < 0 && x < 0.8));
    expect(band.length).toBeGreaterThan(0);
    expect(low.length).toBeGreaterThan(0);
  });

  for (const v of VARIANTS)
    it(v.name, async () => {
      if (v.grpo && v.batch.kind === 'policy') expect(policyPlan(v.batch, v.grpo).kind).toBe(v.plan);
      const r = await bothGradients(v);
      expect(norm(r.ref)).toBeGreaterThan(1e-4);
      expect(relDiff(r.contract, r.ref)).toBeLessThan(1e-6);
      const tis = v.grpo?.tisCap !== null && v.grpo?.tisCap !== undefined;
      if (v.plan !== 'surrogate' && !tis) expect(r.contract).toEqual(r.ref); // the same bits
      expect(r.loss).toBeCloseTo(r.refLoss, 5);
      if (v.batch.kind === 'policy' && v.batch.oldLogprobs) expect(r.clipped).toBeGreaterThan(0); // the clip is exercised
    });
});
