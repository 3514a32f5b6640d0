import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { groupAdvantages } from '../../../trainer/grpo/advantages.ts';
import { sampleStd } from '../../../util/stats.ts';

describe('groupAdvantages (method §5), hand-worked', () => {
  // Group A = [1, 0, 0, 0]: mean 0.25, deviations [0.75, -0.25, -0.25, -0.25],
  //   sum of squares 0.5625 + 3 * 0.0625 = 0.75, sample var 0.75 / 3 = 0.25, std 0.5.
  // Group B = [2, 2, 2, 2]: std 0 -> advantages exactly 0, counted as zero-std.
  // Batch [1,0,0,0,2,2,2,2]: mean 1.125, squares 0.015625 + 3 * 1.265625 + 4 * 0.765625 = 6.875,
  //   sample var 6.875 / 7 = 55/56, std sqrt(55/56) = 0.991031.
  const R = [
    [1, 0, 0, 0],
    [2, 2, 2, 2],
  ];

  it('group scaling: 0.75 / (0.5 + eps), -0.25 / (0.5 + eps)', () => {
    const { advantages, stats } = groupAdvantages(R, 'group', 1e-4);
    const a = advantages[0]!;
    expect(a[0]).toBeCloseTo(0.75 / 0.5001, 12); // 1.4997000600
    for (const x of a.slice(1)) expect(x).toBeCloseTo(-0.25 / 0.5001, 12);
    expect(advantages[1]).toEqual([0, 0, 0, 0]);
    expect(stats.frac_reward_zero_std).toBe(0.5);
    expect(stats.reward_std).toBeCloseTo(0.25, 12); // mean(0.5, 0)
    expect(stats.reward_mean).toBeCloseTo(1.125, 12);
    expect(stats.advantage_max).toBeCloseTo(1.4997, 4);
    expect(stats.advantage_min).toBeCloseTo(-0.4999, 4);
    expect(stats.advantage_mean).toBeCloseTo(0, 12);
  });

  it('batch scaling divides by the std over the whole batch', () => {
    const { advantages } = groupAdvantages(R, 'batch', 0);
    const s = Math.sqrt(55 / 56);
    expect(advantages[0]![0]).toBeCloseTo(0.75 / s, 12); // 0.756788
    expect(advantages[0]![1]).toBeCloseTo(-0.25 / s, 12); // -0.252263
    expect(advantages[1]).toEqual([0, 0, 0, 0]);
  });

  it('none (Dr. GRPO): A = R - group mean', () => {
    const { advantages } = groupAdvantages(R, 'none', 1e-4);
    expect(advantages[0]).toEqual([0.75, -0.25, -0.25, -0.25]);
    expect(advantages[1]).toEqual([0, 0, 0, 0]);
  });

  it('a constant group gives exactly 0 even when its mean is not exactly representable', () => {
    const { advantages, stats } = groupAdvantages([[0.1, 0.1, 0.1, 0.1, 0.1]], 'none', 1e-4);
    expect(advantages[0]!.every((x) => x === 0)).toBe(true);
    expect(stats.frac_reward_zero_std).toBe(1);
  });
});

const reward = fc.double({ min: -3, max: 3, noNaN: true });
const group = fc.array(reward, { minLength: 2, maxLength: 8 });
const batch = fc.integer({ min: 2, max: 8 }).chain((G) => fc.array(fc.array(reward, { minLength: G, maxLength: G }), { minLength: 1, maxLength: 5 }));

describe('groupAdvantages properties', () => {
  it('advantages of a group sum to ~0 (every scaling)', () => {
    fc.assert(
      fc.property(batch, fc.constantFrom('group', 'batch', 'none' as const), (R, scaling) => {
        for (const a of groupAdvantages(R, scaling, 1e-4).advantages) expect(Math.abs(a.reduce((x, y) => x + y, 0))).toBeLessThan(1e-6);
      }),
    );
  });

  it('invariant to adding a constant to every reward', () => {
    fc.assert(
      fc.property(batch, fc.double({ min: -5, max: 5, noNaN: true }), fc.constantFrom('group', 'batch', 'none' as const), (R, c, scaling) => {
        const a = groupAdvantages(R, scaling, 1e-4).advantages.flat();
        const b = groupAdvantages(
          R.map((g) => g.map((r) => r + c)),
          scaling,
          1e-4,
        ).advantages.flat();
        // Adding c rounds each reward; allow the rounding relative to the spread.
        a.forEach((x, i) => expect(b[i]).toBeCloseTo(x, 5));
      }),
    );
  });

  it('a shuffled group gives the same advantages, shuffled', () => {
    fc.assert(
      fc.property(
        group.chain((g) =>
          fc.tuple(
            fc.constant(g),
            fc.shuffledSubarray(
              g.map((_, i) => i),
              { minLength: g.length, maxLength: g.length },
            ),
          ),
        ),
        ([g, perm]) => {
          const a = groupAdvantages([g], 'group', 1e-4).advantages[0]!;
          const b = groupAdvantages([perm.map((i) => g[i]!)], 'group', 1e-4).advantages[0]!;
          perm.forEach((src, k) => expect(b[k]).toBeCloseTo(a[src]!, 9));
        },
      ),
    );
  });

  it('group scaling gives unit sample std (up to eps) when the group varies', () => {
    fc.assert(
      fc.property(
        group.filter((g) => sampleStd(g) > 1e-3),
        (g) => {
          const a = groupAdvantages([g], 'group', 0).advantages[0]!;
          expect(sampleStd(a)).toBeCloseTo(1, 9);
        },
      ),
    );
  });

  it('batch scaling equals none scaling divided by the batch std', () => {
    fc.assert(
      fc.property(batch, (R) => {
        const s = sampleStd(R.flat());
        const none = groupAdvantages(R, 'none', 0).advantages.flat();
        const bat = groupAdvantages(R, 'batch', 1e-4).advantages.flat();
        none.forEach((x, i) => expect(bat[i]).toBeCloseTo(x / (s + 1e-4), 9));
      }),
    );
  });
});
