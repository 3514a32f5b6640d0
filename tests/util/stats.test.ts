// util/stats.ts against numbers worked by hand.
import { describe, expect, it } from 'vitest';
import { mean, populationStd, sampleStd, sampleVariance } from '../../util/stats.ts';

describe('mean and spread', () => {
  it('[2, 4, 4, 4, 5, 5, 7, 9]: mean 5, squared deviations sum to 32', () => {
    const xs = [2, 4, 4, 4, 5, 5, 7, 9];
    expect(mean(xs)).toBe(5);
    expect(populationStd(xs)).toBe(2); // sqrt(32 / 8)
    expect(sampleVariance(xs)).toBeCloseTo(32 / 7, 15);
    expect(sampleStd(xs)).toBeCloseTo(Math.sqrt(32 / 7), 15);
  });
  it('degenerate lists: mean 0 for none, no spread below two values', () => {
    expect(mean([])).toBe(0);
    expect(populationStd([])).toBe(0);
    expect(sampleStd([3])).toBe(0);
    expect(sampleVariance([])).toBe(0);
    expect(populationStd([3])).toBe(0);
  });
});
