// GAE in verl's convention (trainer/ppo/gae.ts) against numbers worked by hand, and the
// properties that pin the convention down: lambda = 1, gamma = 1 gives returns equal to the
// reward-to-go; lambda = 0 gives one-step TD errors; masked-out (observation) tokens are
// skipped exactly as if they were not there.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gae, gaeAdvantageReturn } from '../../../trainer/ppo/gae.ts';
import { maskedMean, maskedVar } from '../../../trainer/ppo/masked.ts';

describe('gae, worked by hand', () => {
  it('three generated tokens, reward on the last, gamma 0.9, lambda 0.8', () => {
    // Backwards, V after the last token = 0 (terminal), gamma * lambda = 0.72:
    //   t=2: delta = 1 + 0.9*0   - 0.8 = 0.2    A = 0.2                       G = 0.2 + 0.8   = 1.0
    //   t=1: delta = 0 + 0.9*0.8 - 0.6 = 0.12   A = 0.12 + 0.72*0.2  = 0.264   G = 0.264 + 0.6 = 0.864
    //   t=0: delta = 0 + 0.9*0.6 - 0.5 = 0.04   A = 0.04 + 0.72*0.264 = 0.23008 G = 0.73008
    const { advantages, returns } = gae([[0, 0, 1]], [[0.5, 0.6, 0.8]], [[1, 1, 1]], 0.9, 0.8);
    [0.23008, 0.264, 0.2].forEach((a, t) => expect(advantages[0]![t]).toBeCloseTo(a, 12));
    [0.73008, 0.864, 1.0].forEach((g, t) => expect(returns[0]![t]).toBeCloseTo(g, 12));
  });

  it('an observation token in the middle and padding at the end are skipped', () => {
    // mask [1, 0, 1, 0]: steps are t=0 and t=2; the reward 5 and value 9 of the observation
    // token and the value 3 of the padding are never read.
    //   t=2: delta = 1 + 0 - 0.8 = 0.2                 A = 0.2                        G = 1.0
    //   t=0: delta = 0 + 0.9*V_2 - 0.5 = 0.72 - 0.5 = 0.22   A = 0.22 + 0.72*0.2 = 0.364   G = 0.864
    const { advantages, returns } = gae([[0, 5, 1, 0]], [[0.5, 9, 0.8, 3]], [[1, 0, 1, 0]], 0.9, 0.8);
    expect(advantages[0]![0]).toBeCloseTo(0.364, 12);
    expect(advantages[0]![2]).toBeCloseTo(0.2, 12);
    expect(returns[0]![0]).toBeCloseTo(0.864, 12);
    expect(returns[0]![2]).toBeCloseTo(1.0, 12);
    expect([advantages[0]![1], advantages[0]![3], returns[0]![1], returns[0]![3]]).toEqual([0, 0, 0, 0]);
  });

  it('rows are independent: a second sequence does not leak into the first', () => {
    const one = gae([[0, 0, 1]], [[0.5, 0.6, 0.8]], [[1, 1, 1]], 0.9, 0.8);
    const two = gae(
      [
        [0, 0, 1],
        [2, 0, 0],
      ],
      [
        [0.5, 0.6, 0.8],
        [1, 1, 1],
      ],
      [
        [1, 1, 1],
        [1, 0, 0],
      ],
      0.9,
      0.8,
    );
    expect(two.advantages[0]).toEqual(one.advantages[0]);
    // row 1: one step, delta = 2 + 0 - 1 = 1
    expect(two.advantages[1]).toEqual([1, 0, 0]);
    expect(two.returns[1]).toEqual([2, 0, 0]);
  });
});

// A batch of rows with rewards, values and masks (at least one generated token per row).
const row = fc.integer({ min: 1, max: 8 }).chain((T) =>
  fc.record({
    r: fc.array(fc.double({ min: -2, max: 2, noNaN: true }), { minLength: T, maxLength: T }),
    v: fc.array(fc.double({ min: -2, max: 2, noNaN: true }), { minLength: T, maxLength: T }),
    m: fc.array(fc.constantFrom(0, 1), { minLength: T, maxLength: T }).filter((m) => m.includes(1)),
  }),
);
const batch = fc.array(row, { minLength: 1, maxLength: 4 });
const unzip = (b: { r: number[]; v: number[]; m: number[] }[]) => ({ r: b.map((x) => x.r), v: b.map((x) => x.v), m: b.map((x) => x.m) });

describe('gae, properties', () => {
  it('lambda = 1, gamma = 1: returns are the reward-to-go over generated tokens, whatever the values', () => {
    fc.assert(
      fc.property(batch, (b) => {
        const { r, v, m } = unzip(b);
        const { returns, advantages } = gae(r, v, m, 1, 1);
        r.forEach((rr, i) =>
          rr.forEach((_, t) => {
            if (!m[i]![t]) return;
            let togo = 0; // sum of rewards of generated tokens from t on
            for (let s = t; s < rr.length; s++) if (m[i]![s]) togo += rr[s]!;
            expect(returns[i]![t]).toBeCloseTo(togo, 9);
            expect(advantages[i]![t]).toBeCloseTo(togo - v[i]![t]!, 9);
          }),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('lambda = 0: each advantage is the one-step TD error r_t + gamma V_next - V_t', () => {
    fc.assert(
      fc.property(batch, fc.double({ min: 0, max: 1, noNaN: true }), (b, gamma) => {
        const { r, v, m } = unzip(b);
        const { advantages } = gae(r, v, m, gamma, 0);
        r.forEach((rr, i) =>
          rr.forEach((_, t) => {
            if (!m[i]![t]) return expect(advantages[i]![t]).toBe(0);
            let next = t + 1;
            while (next < rr.length && !m[i]![next]) next++;
            const vNext = next < rr.length ? v[i]![next]! : 0; // terminal after the last generated token
            expect(advantages[i]![t]).toBeCloseTo(rr[t]! + gamma * vNext - v[i]![t]!, 9);
          }),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('masked-out positions change nothing: same numbers as the sequence without them', () => {
    fc.assert(
      fc.property(batch, fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (b, gamma, lambda) => {
        const { r, v, m } = unzip(b);
        const full = gae(r, v, m, gamma, lambda);
        r.forEach((rr, i) => {
          const keep = rr.map((_, t) => t).filter((t) => m[i]![t]);
          const compact = gae([keep.map((t) => rr[t]!)], [keep.map((t) => v[i]![t]!)], [keep.map(() => 1)], gamma, lambda);
          keep.forEach((t, j) => {
            expect(full.advantages[i]![t]).toBeCloseTo(compact.advantages[0]![j]!, 12);
            expect(full.returns[i]![t]).toBeCloseTo(compact.returns[0]![j]!, 12);
          });
        });
      }),
      { numRuns: 300 },
    );
  });

  it('gaeAdvantageReturn whitens the advantages to mean 0, std 1 over the mask and leaves the returns raw', () => {
    fc.assert(
      fc.property(batch, (b) => {
        const { r, v, m } = unzip(b);
        const raw = gae(r, v, m, 0.95, 0.9);
        const n = m.flat().reduce((x, y) => x + y, 0);
        const v0 = n >= 2 ? maskedVar(raw.advantages, m) : 0;
        fc.pre(v0 > 1e-6);
        const w = gaeAdvantageReturn(r, v, m, 0.95, 0.9);
        expect(maskedMean(w.advantages, m)).toBeCloseTo(0, 9);
        // unbiased variance, as verl; the eps 1e-8 inside the root makes it var / (var + 1e-8)
        expect(maskedVar(w.advantages, m)).toBeCloseTo(v0 / (v0 + 1e-8), 9);
        if (v0 > 1e-2) expect(Math.sqrt(maskedVar(w.advantages, m))).toBeCloseTo(1, 6);
        expect(w.returns).toEqual(raw.returns);
      }),
      { numRuns: 300 },
    );
  });
});
