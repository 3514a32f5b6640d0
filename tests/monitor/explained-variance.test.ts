// The critic's explained-variance trend pooled over quarters (monitor/explained-variance.ts):
// figures worked by hand.
import { describe, expect, it } from 'vitest';
import {
  criticVariancesOf,
  explainedVarianceTrend,
  formatExplainedVarianceTrend,
  pooledExplainedVariance,
  pooledWindows,
} from '../../monitor/explained-variance.ts';
import { explainedVarianceCurve } from '../../monitor/terminal-curve.ts';

const u = (returnsVar: number, residualVar: number) => ({ returnsVar, residualVar });

describe('pooled explained variance', () => {
  it('is 1 - sum Var(G - V) / sum Var(G)', () => {
    // (0.5 + 0.5) / (1 + 3) = 0.25 -> 0.75 (the mean of the two ratios would be (0.5 + 0.8333) / 2 = 0.667)
    expect(pooledExplainedVariance([u(1, 0.5), u(3, 0.5)])).toBeCloseTo(0.75, 12);
    expect(pooledExplainedVariance([u(0, 0.2), u(0, 0)])).toBeNull();
  });

  it('lets an update with (nearly) equal returns count by the variance it has, not by its ratio', () => {
    // alone: 1 - 0.01 / 1e-5 = -999; pooled with (1, 0.5): 1 - 0.51 / 1.00001 = 0.49000...
    expect(pooledExplainedVariance([u(1e-5, 0.01)])).toBeCloseTo(-999, 9);
    expect(pooledExplainedVariance([u(1, 0.5), u(1e-5, 0.01)])).toBeCloseTo(1 - 0.51 / 1.00001, 12);
  });
});

describe('explained-variance trend: first quarter against last', () => {
  it('compares the pooled quarters; a quarter that is the same under every resample has no spread', () => {
    // 8 updates, q = 2: first EV 1 - 2/2 = 0, last 1 - 0/2 = 1; every resample gives the same -> SE 0
    const t = explainedVarianceTrend([u(1, 1), u(1, 1), u(5, 0), u(5, 9), u(5, 2), u(5, 7), u(1, 0), u(1, 0)], 42);
    expect(t).toMatchObject({ updates: 8, quarter: 2, first: 0, last: 1, diff: 1, se: 0, learned: true });
  });

  it('has the bootstrap SE worked by hand', () => {
    // first quarter {(1, 0), (1, 1)}: resamples (a,a) EV 1, (b,b) 0, (a,b) or (b,a) 0.5 with
    // probabilities 1/4, 1/4, 1/2: mean 0.5, variance 1/4 + 1/8 - 1/4 = 0.125; last quarter
    // constant (EV 1) -> SE of the difference sqrt(0.125) = 0.35355 (within the bootstrap's own
    // error: its SD over B = 20,000 draws is ~0.5% of it)
    const t = explainedVarianceTrend([u(1, 0), u(1, 1), u(1, 0), u(1, 0), u(1, 0), u(1, 0), u(1, 0), u(1, 0)], 7, 20_000)!;
    expect(t.first).toBeCloseTo(0.5, 12);
    expect(t.diff).toBeCloseTo(0.5, 12);
    expect(Math.abs(t.se - Math.sqrt(0.125))).toBeLessThan(0.01);
    expect(t.learned).toBe(false); // 0.5 < 2 x 0.354
    // the same seed, the same figure
    expect(explainedVarianceTrend([u(1, 0), u(1, 1), u(1, 0), u(1, 0), u(1, 0), u(1, 0), u(1, 0), u(1, 0)], 7, 20_000)!.se).toBe(t.se);
  });

  it('is not "up" when the difference is within 2 SE, and is null for fewer than 8 updates', () => {
    // first {(1, 0), (1, 1)} EV 0.5, last {(1, 0.5), (1, 0.5)} EV 0.5: difference 0
    const t = explainedVarianceTrend([u(1, 0), u(1, 1), u(1, 0), u(1, 0), u(1, 0), u(1, 0), u(1, 0.5), u(1, 0.5)], 7)!;
    expect(t.diff).toBeCloseTo(0, 12);
    expect(t.learned).toBe(false);
    expect(explainedVarianceTrend([u(1, 0), u(1, 1), u(1, 0), u(1, 0), u(1, 0), u(1, 0), u(1, 0)], 7)).toBeNull();
    expect(formatExplainedVarianceTrend(t)).toMatch(
      /first 2 updates 0\.5000, last 2 0\.5000, difference 0\.0000 ± \d\.\d{4} \(bootstrap SE over updates\) -> not above 2 SE/,
    );
  });

  it('reads the variances from the metrics records, or says a run has none', () => {
    const rec = (ev: number, g?: number, r?: number) => ({
      step: 1,
      'critic/vf_explained_var': ev,
      ...(g === undefined ? {} : { 'critic/returns_var': g, 'critic/residual_var': r }),
    });
    expect(criticVariancesOf([rec(0.5, 2, 1), { step: 2, 'rollout/reward': 1 }, rec(0, 1, 1)])).toEqual([u(2, 1), u(1, 1)]);
    expect(criticVariancesOf([rec(0.5, 2, 1), rec(0)])).toBeNull();
  });
});

describe('pooled windows: the curve the demo draws', () => {
  it('pools each run of w consecutive updates', () => {
    // windows of 2 over (1, 0.5), (3, 0.5), (1e-5, 0.01), (0, 0): 1 - 1/4, 1 - 0.51/3.00001, 1 - 0.01/1e-5, undefined
    const ws = pooledWindows([u(1, 0.5), u(3, 0.5), u(1e-5, 0.01), u(0, 0)], 2);
    expect(ws.length).toBe(3);
    expect(ws[0]).toBeCloseTo(0.75, 12);
    expect(ws[1]).toBeCloseTo(1 - 0.51 / 3.00001, 12);
    expect(ws[2]).toBeCloseTo(1 - 0.01 / 1e-5, 6);
    expect(pooledWindows([u(0, 0), u(0, 0)], 2)).toEqual([null]);
    expect(pooledWindows([u(1, 0)], 2)).toEqual([]);
  });

  it('draws them with the windows it covers in the title', () => {
    const us = Array.from({ length: 8 }, (_, i) => u(1, 1 - i / 8)); // pooled EV rises over the run
    const text = explainedVarianceCurve(us, 2, 20);
    expect(text.split('\n')[0]).toBe('critic explained variance pooled over each 2 consecutive updates, windows ending at updates 2-8');
    expect(text).toContain('0.813'); // the last window: 1 - (2/8 + 1/8) / 2 = 0.8125
    expect(explainedVarianceCurve(us.slice(0, 2), 2)).toMatch(/too few updates to draw/);
  });
});
