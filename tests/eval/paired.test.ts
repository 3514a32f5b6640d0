// Paired differences of pooled metrics (eval/paired.ts), worked by hand: two policies on the
// same three instances, hand-picked resamples, so every replicate difference can be checked.
import { describe, expect, it } from 'vitest';
import { pairedDifference, verdict } from '../../eval/paired.ts';
import { viewResult } from '../../eval/spread.ts';
import { episode } from './scored-fixture.ts';

// one target of weight 1 per instance; covered or not
const eps = (cov: boolean[]) => cov.map((c, i) => episode(`i${i}`, 'seen', [[1, true, c]], [c]));
// resamples of the 3 instances: [0,1,2], [0,0,0], [1,1,2], [2,2,2]
const plan = () => [
  [0, 1, 2],
  [0, 0, 0],
  [1, 1, 2],
  [2, 2, 2],
];

describe('pairedDifference', () => {
  it('takes b - a per resample, from the same resamples', () => {
    const a = viewResult(eps([true, false, false]), 0.55, 'overall', plan, 0.95); // WCov 1/3
    const b = viewResult(eps([true, true, false]), 0.55, 'overall', plan, 0.95); // WCov 2/3
    const d = pairedDifference(a, b, 'wcov', 0.95);
    // replicate differences: [2/3-1/3, 1-1, 2/3-0, 0-0] = [1/3, 0, 2/3, 0]
    expect(d.value).toBeCloseTo(1 / 3, 12);
    const xs = [1 / 3, 0, 2 / 3, 0];
    const m = xs.reduce((s, x) => s + x, 0) / 4;
    expect(d.se).toBeCloseTo(Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / 3), 12);
    expect(verdict(d)).toMatch(/^\+0\.3333 ± 0\.3191 \(1\.0 SE: within noise\)$/);
  });

  it('no SE when the instances differ; above noise at 2 SE or more', () => {
    const a = viewResult(eps([true, false, false]), 0.55, 'overall', plan, 0.95);
    const c = viewResult(
      [...eps([true, false, false]), episode('i9', 'seen', [[1, true, true]], [true])],
      0.55,
      'overall',
      (_v, n) => [Array.from({ length: n }, (_, i) => i), Array.from({ length: n }, () => 0)],
      0.95,
    );
    expect(pairedDifference(a, c, 'wcov', 0.95).se).toBeNull();
    expect(verdict({ value: 0.1, se: 0.04, lo: null, hi: null, defined: 10, samples: 10 })).toBe('+0.1000 ± 0.0400 (2.5 SE: above noise)');
  });
});
