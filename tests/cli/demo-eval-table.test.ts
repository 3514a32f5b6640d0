// The demo's final table and its paired differences (cli/demo/eval-phase.ts), on scored
// episodes written by hand: base, SFT and GRPO on the same three instances.
import { describe, expect, it } from 'vitest';
import { demoDifferences, demoTable } from '../../cli/demo/eval-phase.ts';
import { viewResult } from '../../eval/spread.ts';
import { episode } from '../eval/scored-fixture.ts';

const plan = () => [
  [0, 1, 2],
  [0, 0, 0],
  [1, 1, 2],
  [2, 2, 2],
];
const eps = (cov: boolean[]) => cov.map((c, i) => episode(`i${i}`, 'seen', [[1, true, c]], [c]));
const row = (policy: string, cov: boolean[]) => ({ policy, set: 'test', v: viewResult(eps(cov), 0.55, 'overall', plan, 0.95) });

describe('demo eval table', () => {
  const rows = [row('base', [false, false, false]), row('SFT', [true, false, false]), row('GRPO', [true, true, true])];
  it('one row per policy with every metric ± SE', () => {
    const t = demoTable(rows).split('\n');
    expect(t).toHaveLength(5);
    // P = R = 0: F1 is 0 (metrics.ts), not n/a
    expect(t[2]).toBe('| base | test (3) | 3 | 0.0000 ± 0.0000 | 0.0000 ± 0.0000 | 0.0000 ± 0.0000 | 0.00 ± 0.00 | 0.00 ± 0.00 | 3/3 |');
    // SFT WCov 1/3; replicates [1/3, 1, 0, 0]
    expect(t[3]).toContain('| SFT | test (3) | 3 | 0.3333 ± 0.4714 |');
  });
  it('paired differences say plainly when they are within noise', () => {
    const d = demoDifferences(rows, 0.95).split('\n');
    // SFT - base WCov: replicates [1/3, 1, 0, 0] (base is 0 everywhere): SE 0.4714, 0.7 SE
    expect(d[0]).toMatch(/^- test: SFT - base: WCov \+0\.3333 ± 0\.4714 \(0\.7 SE: within noise\)/);
    // GRPO - SFT WCov: [2/3, 0, 1, 1]: mean 0.6667... point 2/3, SE 0.4714 -> 1.4 SE
    expect(d[1]).toMatch(/^- test: GRPO - SFT: WCov \+0\.6667 ± 0\.4714 \(1\.4 SE: within noise\)/);
  });
});
