import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { maxWeightMatching } from '../../reward/hungarian.ts';

/** Reference: try every injective map of the smaller side into the larger one. */
function bruteForce(w: number[][]): number {
  const n = w.length;
  const m = w[0]?.length ?? 0;
  if (n === 0 || m === 0) return 0;
  const t = n <= m ? w : Array.from({ length: m }, (_, j) => w.map((r) => r[j]!));
  const rows = t.length;
  const cols = t[0]!.length;
  const used = new Array<boolean>(cols).fill(false);
  const go = (i: number): number => {
    if (i === rows) return 0;
    let best = -Infinity;
    for (let j = 0; j < cols; j++) {
      if (used[j]) continue;
      used[j] = true;
      best = Math.max(best, t[i]![j]! + go(i + 1));
      used[j] = false;
    }
    return best;
  };
  return go(0);
}

const matrix = fc
  .tuple(fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 7 }))
  .chain(([n, m]) => fc.array(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: m, maxLength: m }), { minLength: n, maxLength: n }));

describe('maxWeightMatching (method §4 M*)', () => {
  it('equals brute force on random matrices up to 7x7, rectangular too', () => {
    fc.assert(
      fc.property(matrix, (w) => {
        const res = maxWeightMatching(w);
        expect(res.total).toBeCloseTo(bruteForce(w), 9);
        // One-to-one and complete on the smaller side.
        const rows = res.pairs.map(([i]) => i);
        const cols = res.pairs.map(([, j]) => j);
        expect(new Set(rows).size).toBe(rows.length);
        expect(new Set(cols).size).toBe(cols.length);
        expect(res.pairs.length).toBe(Math.min(w.length, w[0]!.length));
        const sum = res.pairs.reduce((a, [i, j]) => a + w[i]![j]!, 0);
        expect(sum).toBeCloseTo(res.total, 12);
      }),
      { numRuns: 300 },
    );
  });

  it('picks the global optimum over the greedy choice (hand example)', () => {
    // Greedy takes 0.9 (r0,c0) then 0.1 (r1,c1) = 1.0; the optimum is 0.8 + 0.7 = 1.5.
    const res = maxWeightMatching([
      [0.9, 0.8],
      [0.7, 0.1],
    ]);
    expect(res.pairs).toEqual([
      [0, 1],
      [1, 0],
    ]);
    expect(res.total).toBeCloseTo(1.5, 12);
  });

  it('handles empty sides and tall matrices', () => {
    expect(maxWeightMatching([])).toEqual({ pairs: [], total: 0 });
    expect(maxWeightMatching([[], []])).toEqual({ pairs: [], total: 0 });
    // 3 rows, 1 column: only the best row gets it.
    expect(maxWeightMatching([[0.2], [0.6], [0.4]]).pairs).toEqual([[1, 0]]);
  });
});
