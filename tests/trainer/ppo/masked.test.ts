// Masked statistics (trainer/ppo/masked.ts), worked by hand, in verl's definitions.
import { describe, expect, it } from 'vitest';
import { maskedMean, maskedVar, maskedWhiten } from '../../../trainer/ppo/masked.ts';

describe('masked statistics', () => {
  it('mean and variance ignore masked-out positions (values [1, 2, 3, 100], mask [1, 1, 1, 0])', () => {
    // mean (1 + 2 + 3) / 3 = 2; squared deviations 1, 0, 1, mean 2/3; unbiased: 2/3 * 3/2 = 1.
    expect(maskedMean([[1, 2, 3, 100]], [[1, 1, 1, 0]])).toBe(2);
    expect(maskedVar([[1, 2, 3, 100]], [[1, 1, 1, 0]], false)).toBeCloseTo(2 / 3, 15);
    expect(maskedVar([[1, 2, 3, 100]], [[1, 1, 1, 0]])).toBeCloseTo(1, 15);
  });

  it('whitening pools the whole batch: [[1, 2], [3, 4]] -> (x - 2.5) / sqrt(5/3 + 1e-8)', () => {
    // mean 2.5; deviations -1.5, -0.5, 0.5, 1.5; squares sum 5, / 4 = 1.25, * 4/3 = 5/3.
    const w = maskedWhiten(
      [
        [1, 2],
        [3, 4],
      ],
      [
        [1, 1],
        [1, 1],
      ],
    );
    const s = Math.sqrt(5 / 3 + 1e-8); // 1.2909944
    expect(w[0]![0]).toBeCloseTo(-1.5 / s, 12); // -1.1618950
    expect(w[0]![1]).toBeCloseTo(-0.5 / s, 12);
    expect(w[1]![0]).toBeCloseTo(0.5 / s, 12);
    expect(w[1]![1]).toBeCloseTo(1.5 / s, 12);
  });

  it('whitening writes 0 off the mask and keeps the mean when shiftMean is false', () => {
    const w = maskedWhiten([[1, 2, 3, 100]], [[1, 1, 1, 0]]);
    expect(w[0]![0]).toBeCloseTo(-1 / Math.sqrt(1 + 1e-8), 12);
    expect(w[0]![3]).toBe(0);
    const kept = maskedWhiten([[1, 2, 3, 100]], [[1, 1, 1, 0]], false);
    expect(kept[0]![1]).toBeCloseTo(2, 12); // (2 - 2) * scale + 2
  });

  it('refuses mismatched shapes and non-0/1 masks', () => {
    expect(() => maskedMean([[1, 2]], [[1]])).toThrow(/length/);
    expect(() => maskedMean([[1, 2]], [[1, 0.5]])).toThrow(/0 or 1/);
    expect(() => maskedMean([[1, 2]], [[0, 0]])).toThrow(/all-zero/);
    expect(() => maskedVar([[1, 2]], [[1, 0]])).toThrow(/two masked/);
  });
});
