// The clipped value loss and the critic metrics (trainer/ppo/value-loss.ts, metrics.ts), worked by hand.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { criticMetrics, explainedVariance } from '../../../trainer/ppo/metrics.ts';
import { clippedValueLoss } from '../../../trainer/ppo/value-loss.ts';

describe('clippedValueLoss (verl compute_value_loss, token-mean)', () => {
  it('one row, clip range 0.5', () => {
    // old [0, 1, 2, -], new [0.2, 2, 1, -], returns [1, 1, 1, -], mask [1, 1, 1, 0]
    //   t0: clip(0.2, -0.5, 0.5) = 0.2; (0.2-1)^2 = 0.64 both        -> 0.64, not clipped
    //   t1: clip(2, 0.5, 1.5) = 1.5;    (2-1)^2 = 1, (1.5-1)^2 = 0.25  -> 1,    not clipped
    //   t2: clip(1, 1.5, 2.5) = 1.5;    (1-1)^2 = 0, (1.5-1)^2 = 0.25  -> 0.25, clipped term larger
    //   vf_loss = 0.5 * (0.64 + 1 + 0.25) / 3 = 0.315; vf_clipfrac = 1/3
    const l = clippedValueLoss([[0.2, 2, 1, 5]], [[0, 1, 2, 0]], [[1, 1, 1, 9]], [[1, 1, 1, 0]], 0.5);
    expect(l.vf_loss).toBeCloseTo(0.315, 12);
    expect(l.vf_clipfrac).toBeCloseTo(1 / 3, 12);
  });

  it('is 0.5 * MSE when the new values stay within the clip range', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.double({ min: -3, max: 3, noNaN: true }), fc.double({ min: -0.49, max: 0.49, noNaN: true }), fc.double({ min: -3, max: 3, noNaN: true })),
          { minLength: 1, maxLength: 12 },
        ),
        (xs) => {
          const old = [xs.map(([o]) => o)];
          const v = [xs.map(([o, d]) => o + d)];
          const g = [xs.map(([, , r]) => r)];
          const mse = xs.reduce((a, [o, d, r]) => a + (o + d - r) ** 2, 0) / xs.length;
          const l = clippedValueLoss(v, old, g, [xs.map(() => 1)], 0.5);
          expect(l.vf_loss).toBeCloseTo(0.5 * mse, 9);
          expect(l.vf_clipfrac).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('explained variance (verl critic/vf_explained_var)', () => {
  it('returns [1, 2, 3], values [1, 2, 2]', () => {
    // G - V = [0, 0, 1]: mean 1/3, unbiased var ((1/3)^2 + (1/3)^2 + (2/3)^2) / 2 = 1/3
    // Var(G) = (1 + 0 + 1) / 2 = 1; EV = 1 - (1/3) / (1 + 1e-5) = 0.6666700
    expect(explainedVariance([[1, 2, 3]], [[1, 2, 2]], [[1, 1, 1]])).toBeCloseTo(1 - 1 / 3 / (1 + 1e-5), 12);
  });

  it('is ~1 for a perfect critic and ~0 for a constant one at the mean; masked tokens are ignored', () => {
    expect(explainedVariance([[1, 2, 3, 50]], [[1, 2, 3, -7]], [[1, 1, 1, 0]])).toBeCloseTo(1, 12);
    expect(explainedVariance([[1, 2, 3]], [[2, 2, 2]], [[1, 1, 1]])).toBeCloseTo(1 - 1 / (1 + 1e-5), 12);
  });

  it('criticMetrics reports the masked means, maxima and minima', () => {
    const m = criticMetrics([[1, 2, 99]], [[0.5, 1.5, -99]], [[0.1, -0.2, 99]], [[1, 1, 0]]);
    expect(m).toMatchObject({
      returns_mean: 1.5,
      returns_max: 2,
      returns_min: 1,
      values_mean: 1,
      values_max: 1.5,
      values_min: 0.5,
      advantages_max: 0.1,
      advantages_min: -0.2,
    });
    expect(m.advantages_mean).toBeCloseTo(-0.05, 12);
    // G - V = [0.5, 0.5]: var 0 -> EV = 1; Var(G) over [1, 2] = 0.5
    expect(m.vf_explained_var).toBeCloseTo(1, 12);
    expect(m.returns_var).toBeCloseTo(0.5, 12);
    expect(m.residual_var).toBe(0);
  });

  it('reports the two variances the explained variance is made of', () => {
    // returns [1, 2, 3], values [1, 2, 2]: Var(G) = 1, Var(G - V) = 1/3 (the first case above)
    const m = criticMetrics([[1, 2, 3]], [[1, 2, 2]], [[0, 0, 0]], [[1, 1, 1]]);
    expect(m.returns_var).toBeCloseTo(1, 12);
    expect(m.residual_var).toBeCloseTo(1 / 3, 12);
    expect(m.vf_explained_var).toBeCloseTo(1 - m.residual_var / (m.returns_var + 1e-5), 12);
  });
});
