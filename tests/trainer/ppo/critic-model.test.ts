// The critic over the real tfjs Qwen3 forward (a tiny random model): value alignment (column t
// reads the state before token t, causally), micro-batching, and that repeated critic steps
// on a fixed batch fit the returns (value loss falls, explained variance rises).
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { LoraSchema } from '../../../configs/schema.ts';
import type { Qwen3Config } from '../../../model/config.ts';
import { AdamW } from '../../../trainer/optim/adamw.ts';
import { createCritic, criticValues } from '../../../trainer/ppo/critic.ts';
import { criticStep, scoreValues } from '../../../trainer/ppo/critic-step.ts';
import { explainedVariance } from '../../../trainer/ppo/metrics.ts';
import { Rng } from '../../../util/rng.ts';
import { randomQwen3 } from '../step-fixtures.ts';

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
const lora = LoraSchema.parse({ r: 4, alpha: 8, dropout: 0 });
const rng = new Rng(5);
const lens = [6, 9, 7, 8];
const inputIds = lens.map((n) => Array.from({ length: n }, () => rng.int(cfg.vocabSize)));
const mask = lens.map((n) => Array.from({ length: n }, (_, t) => (t >= 3 ? 1 : 0)));
const adam = (vars: tf.Variable[]) => new AdamW(vars, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });

describe('critic on the tfjs Qwen3', () => {
  it('column t is V(h_{t-1}): it does not see token t, and column t+1 does', () => {
    const critic = createCritic(model, lora, 1);
    const ids = inputIds[1]!;
    const changed = [...ids];
    changed[5] = (changed[5]! + 1) % cfg.vocabSize;
    const [a, b] = [ids, changed].map((x) => criticValues(model, critic, [x], undefined).arraySync()[0]!) as [number[], number[]];
    expect(a[0]).toBe(0);
    for (let t = 1; t <= 5; t++) expect(b[t]).toBeCloseTo(a[t]!, 6);
    expect(Math.abs(b[6]! - a[6]!)).toBeGreaterThan(1e-6);
    // and truncating after token t leaves column t as it was (causal)
    const cut = criticValues(model, critic, [ids.slice(0, 5)], undefined).arraySync()[0]!;
    expect(cut[4]).toBeCloseTo(a[4]!, 6);
  });

  it('micro-batches of 1 and of 4 give the same update (1e-5)', () => {
    const returns = mask.map((row, b) => row.map((m) => m * (b - 1.5)));
    const run = (micro: number) => {
      const critic = createCritic(model, lora, 2);
      const old = scoreValues(model, critic, inputIds, mask, 4);
      const s = criticStep(
        model,
        critic,
        adam(critic.variables()),
        { inputIds, mask, oldValues: old, returns },
        { lr: 1e-2, microBatchSize: micro, maxGradNorm: 1, cliprangeValue: 0.5 },
      );
      return { s, vars: critic.variables().map((v) => Array.from(v.dataSync())) };
    };
    const [one, four] = [run(1), run(4)];
    expect(one.s.vf_loss).toBeCloseTo(four.s.vf_loss, 5);
    one.vars.forEach((v, i) => v.forEach((x, k) => expect(x).toBeCloseTo(four.vars[i]![k]!, 5)));
  });

  it('fits fixed returns: value loss falls and explained variance rises over 30 steps', () => {
    const critic = createCritic(model, lora, 3);
    const opt = adam(critic.variables());
    const returns = mask.map((row, b) => row.map((m, t) => m * ((b % 2 ? 1 : -1) + 0.1 * t)));
    const ev0 = explainedVariance(returns, scoreValues(model, critic, inputIds, mask, 4), mask);
    const losses: number[] = [];
    for (let k = 0; k < 30; k++) {
      const old = scoreValues(model, critic, inputIds, mask, 4);
      losses.push(
        criticStep(model, critic, opt, { inputIds, mask, oldValues: old, returns }, { lr: 2e-2, microBatchSize: 4, maxGradNorm: 1, cliprangeValue: 0.5 })
          .vf_loss,
      );
    }
    const ev1 = explainedVariance(returns, scoreValues(model, critic, inputIds, mask, 4), mask);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! / 2);
    expect(ev1).toBeGreaterThan(ev0);
    expect(ev1).toBeGreaterThan(0.5);
  });
});
