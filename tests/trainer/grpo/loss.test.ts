import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import * as tf from '@tensorflow/tfjs';
import { grpoLoss, grpoPerTokenLoss, type GrpoLossOptions, type LossType } from '../../../trainer/grpo/loss.ts';
import { grpoTokenSums, grpoStatMeans } from '../../../trainer/grpo/stats.ts';

await tf.setBackend('cpu');

// Hand example (B = 2, T = 3), eps = 0.2:
//   oldLogp = [[0, -1, -2], [0, -0.5, -1]]
//   rho     = [[1, 1.5, 1.1], [1, 0.5, 0.9]]   (logp = oldLogp + ln rho)
//   mask    = [[0, 1, 1], [0, 1, 0]]           (column 0 is the prompt)
//   A       = [1, -2]
// Per-token L = -min(rho A, clip(rho, 0.8, 1.2) A) on masked tokens:
//   row 0, t1: rho 1.5, A 1  -> min(1.5, 1.2) = 1.2  -> L = -1.2  (clipped high)
//   row 0, t2: rho 1.1, A 1  -> min(1.1, 1.1) = 1.1  -> L = -1.1
//   row 1, t1: rho 0.5, A -2 -> min(-1, -1.6) = -1.6 -> L =  1.6  (clipped low)
// grpo    = mean(mean(-1.2, -1.1), 1.6) = mean(-1.15, 1.6) = 0.225
// dapo    = (-1.2 - 1.1 + 1.6) / 3 = -0.7 / 3 = -0.233333
// dr_grpo = -0.7 / (B * L) = -0.7 / (2 * 4) = -0.0875   (maxCompletionLength L = 4)
const old = [
  [0, -1, -2],
  [0, -0.5, -1],
];
const rho = [
  [1, 1.5, 1.1],
  [1, 0.5, 0.9],
];
const logpArr = old.map((row, b) => row.map((o, t) => o + Math.log(rho[b]![t]!)));
const maskArr = [
  [0, 1, 1],
  [0, 1, 0],
];
const advArr = [1, -2];

function inputs(logp: tf.Tensor2D = tf.tensor2d(logpArr)) {
  return { logp, oldLogp: tf.tensor2d(old), advantages: tf.tensor1d(advArr), mask: tf.tensor2d(maskArr) };
}
const base: GrpoLossOptions = { lossType: 'grpo', epsilon: 0.2, betaKl: 0, tisCap: null, maxCompletionLength: 4 };
const lossOf = (o: Partial<GrpoLossOptions>, x = inputs()) => grpoLoss(x, { ...base, ...o }).dataSync()[0]!;

describe('grpoLoss on the hand example', () => {
  it('aggregates by loss type', () => {
    expect(lossOf({ lossType: 'grpo' })).toBeCloseTo(0.225, 5);
    expect(lossOf({ lossType: 'dapo' })).toBeCloseTo(-0.7 / 3, 5);
    expect(lossOf({ lossType: 'bnpo' })).toBeCloseTo(-0.7 / 3, 5);
    expect(lossOf({ lossType: 'dr_grpo' })).toBeCloseTo(-0.0875, 5);
  });

  it('epsilonHigh widens only the upper clip', () => {
    // row 0, t1 now unclipped (1.5 < 1 + 0.6): L = -1.5; dapo = (-1.5 - 1.1 + 1.6) / 3 = -1/3
    expect(lossOf({ lossType: 'dapo', epsilonHigh: 0.6 })).toBeCloseTo(-1 / 3, 5);
  });

  it('gradient is zero on tokens clipped in the direction of A, -rho*A/normalizer elsewhere', () => {
    const g = tf.grad((lp: tf.Tensor) => grpoLoss(inputs(lp as tf.Tensor2D), base))(tf.tensor2d(logpArr));
    const d = g.arraySync() as number[][];
    // grpo: dL/dlogp_t = -rho_t A / (n_tokens(b) * B) = -1.1 * 1 / (2 * 2) = -0.275 at row 0, t2
    expect(d[0]![1]).toBeCloseTo(0, 6); // clipped high with A > 0
    expect(d[1]![1]).toBeCloseTo(0, 6); // clipped low with A < 0
    expect(d[0]![2]).toBeCloseTo(-0.275, 5);
    expect(Math.abs(d[0]![0]!)).toBe(0); // masked
    expect(Math.abs(d[1]![2]!)).toBe(0); // masked
  });

  it('a ratio below 1 - eps with A > 0 is not clipped (the clip only binds in the direction of A)', () => {
    // One token, rho = 0.5, A = +1: min(0.5, 0.8) = 0.5 -> L = -0.5, dL/dlogp = -rho A = -0.5
    const x = (lp: tf.Tensor) => ({ logp: lp as tf.Tensor2D, oldLogp: tf.tensor2d([[0]]), advantages: tf.tensor1d([1]), mask: tf.tensor2d([[1]]) });
    const lp0 = tf.tensor2d([[Math.log(0.5)]]);
    expect(grpoLoss(x(lp0), base).dataSync()[0]).toBeCloseTo(-0.5, 6);
    expect(
      tf
        .grad((lp: tf.Tensor) => grpoLoss(x(lp), base))(lp0)
        .dataSync()[0],
    ).toBeCloseTo(-0.5, 6);
  });

  it('truncated importance sampling multiplies each token by min(exp(old - rollout), cap)', () => {
    // rollout = old - ln 3 on every token -> weight 3, capped at 2: dapo loss doubles
    const rollout = tf.tensor2d(old.map((r) => r.map((o) => o - Math.log(3))));
    const x = { ...inputs(), rolloutLogp: rollout };
    expect(lossOf({ lossType: 'dapo', tisCap: 2 }, x)).toBeCloseTo((2 * -0.7) / 3, 5);
    expect(lossOf({ lossType: 'dapo', tisCap: 5 }, x)).toBeCloseTo((3 * -0.7) / 3, 5);
  });

  it('adds betaKl * k3(ref, logp)', () => {
    // ref = logp + ln 2 on every token: k3 = 2 - ln 2 - 1 = 0.3068528 per masked token
    const ref = tf.tensor2d(logpArr.map((r) => r.map((v) => v + Math.log(2))));
    const withKl = lossOf({ lossType: 'dapo', betaKl: 0.1 }, { ...inputs(), refLogp: ref } as ReturnType<typeof inputs>);
    expect(withKl).toBeCloseTo(-0.7 / 3 + 0.1 * (1 - Math.log(2)), 5);
  });

  it('reports clip ratios as token means (TRL names)', () => {
    const s = grpoStatMeans(grpoTokenSums(inputs(), base));
    expect(s['clip_ratio/low_mean']).toBeCloseTo(1 / 3, 6);
    expect(s['clip_ratio/high_mean']).toBeCloseTo(1 / 3, 6);
    expect(s['clip_ratio/region_mean']).toBeCloseTo(2 / 3, 6);
    // approx_kl: k3(old, new) with r = old - logp = -ln rho: rho - 1 - ln rho... precisely
    // exp(-ln rho) + ln rho - 1 = 1/rho + ln rho - 1 on masked tokens (rho 1.5, 1.1, 0.5)
    const k = (r: number) => 1 / r + Math.log(r) - 1;
    expect(s.approx_kl).toBeCloseTo((k(1.5) + k(1.1) + k(0.5)) / 3, 5);
    // no rollout logprobs given: the server/trainer diagnostics are 0
    expect(s['sampling/importance_sampling_ratio/mean']).toBe(0);
  });

  it('reports the server/trainer mismatch: mean exp(logp - rolloutLogp) and max |diff| on policy tokens', () => {
    // rolloutLogp = logp - [[9, 0.1, 0.2], [9, -0.3, 9]]: the 9s are off the mask (column 0, row 1 t2)
    const shift = [
      [9, 0.1, 0.2],
      [9, -0.3, 9],
    ];
    const rollout = tf.tensor2d(logpArr.map((r, b) => r.map((v, t) => v - shift[b]![t]!)));
    const s = grpoStatMeans(grpoTokenSums({ ...inputs(), rolloutLogp: rollout }, base));
    expect(s['sampling/importance_sampling_ratio/mean']).toBeCloseTo((Math.exp(0.1) + Math.exp(0.2) + Math.exp(-0.3)) / 3, 5);
    expect(s['sampling/logprob_diff/max']).toBeCloseTo(0.3, 5);
  });
});

const small = fc.integer({ min: 1, max: 4 });
const batchArb = fc.tuple(small, fc.integer({ min: 2, max: 6 })).chain(([B, T]) =>
  fc.record({
    B: fc.constant(B),
    T: fc.constant(T),
    logp: fc.array(fc.array(fc.double({ min: -5, max: 0, noNaN: true }), { minLength: T, maxLength: T }), { minLength: B, maxLength: B }),
    delta: fc.array(fc.array(fc.double({ min: -0.5, max: 0.5, noNaN: true }), { minLength: T, maxLength: T }), { minLength: B, maxLength: B }),
    mask: fc.array(fc.array(fc.constantFrom<number>(0, 1), { minLength: T, maxLength: T }), { minLength: B, maxLength: B }),
    adv: fc.array(fc.double({ min: -2, max: 2, noNaN: true }), { minLength: B, maxLength: B }),
  }),
);

describe('grpoLoss properties', () => {
  it('at ratio 1 every masked token has loss -A and gradient -A (before aggregation)', () => {
    fc.assert(
      fc.property(batchArb, ({ logp, mask, adv }) => {
        tf.tidy(() => {
          const x = (lp: tf.Tensor) => ({ logp: lp as tf.Tensor2D, oldLogp: tf.tensor2d(logp), advantages: tf.tensor1d(adv), mask: tf.tensor2d(mask) });
          const lp = tf.tensor2d(logp);
          const per = grpoPerTokenLoss(x(lp), base).arraySync();
          const grad = tf
            .grad((l: tf.Tensor) => tf.sum(tf.mul(grpoPerTokenLoss(x(l), base), tf.tensor2d(mask))))(lp)
            .arraySync() as number[][];
          per.forEach((row, b) =>
            row.forEach((v, t) => {
              if (mask[b]![t]) {
                expect(v).toBeCloseTo(-adv[b]!, 5);
                expect(grad[b]![t]).toBeCloseTo(-adv[b]!, 5);
              }
            }),
          );
        });
      }),
      { numRuns: 40 },
    );
  });

  it('micro-batch losses with the global normalizer sum to the full-batch loss, every loss type', () => {
    fc.assert(
      fc.property(batchArb, fc.constantFrom<LossType>('grpo', 'bnpo', 'dapo', 'dr_grpo'), ({ B, logp, delta, mask, adv }, lossType) => {
        const newLp = logp.map((r, b) => r.map((v, t) => v + delta[b]![t]!));
        const o: GrpoLossOptions = { ...base, lossType, normalizer: { sequences: B, tokens: mask.flat().reduce((a, c) => a + c, 0) } };
        const x = (rows: number[]) => ({
          logp: tf.tensor2d(rows.map((b) => newLp[b]!)),
          oldLogp: tf.tensor2d(rows.map((b) => logp[b]!)),
          advantages: tf.tensor1d(rows.map((b) => adv[b]!)),
          mask: tf.tensor2d(rows.map((b) => mask[b]!)),
        });
        const all = [...Array(B).keys()];
        const full = tf.tidy(() => grpoLoss(x(all), o).dataSync()[0]!);
        const parts = all.map((b) => tf.tidy(() => grpoLoss(x([b]), o).dataSync()[0]!));
        expect(parts.reduce((a, c) => a + c, 0)).toBeCloseTo(full, 4);
      }),
      { numRuns: 60 },
    );
  });
});
