// The terminal reward curves (monitor/terminal-curve.ts).
import { describe, expect, it } from 'vitest';
import { resample, rewardCurves } from '../../monitor/terminal-curve.ts';

describe('resample', () => {
  it('stretches short series and averages runs of points into at most `width` columns', () => {
    expect(resample([1, 2, 3], 5)).toEqual([1, 2, 3]);
    expect(resample([1, 2, 3], 7)).toEqual([1, 1, 2, 2, 3, 3]); // floor(7 / 3) = 2 columns each
    // 6 points into 3 columns: [1,2] [3,4] [5,6]
    expect(resample([1, 2, 3, 4, 5, 6], 3)).toEqual([1.5, 3.5, 5.5]);
    // 5 into 2: floor(0)=0..floor(2.5)=2 -> [1,2]; 2..5 -> [3,4,5]
    expect(resample([1, 2, 3, 4, 5], 2)).toEqual([1.5, 4]);
  });
});

describe('rewardCurves', () => {
  const recs = [0, 1, 2, 3].map((i) => ({ step: i + 1, reward: i / 3, 'rewards/coverage/mean': 0.5, 'rewards/c_acq/mean': 0.04 * i }));
  it('draws the total with its range and one chart per component present', () => {
    const text = rewardCurves(recs);
    expect(text).toMatch(/^reward per update, updates 1-4\n/);
    expect(text).toContain('1.000'); // the top of the axis is the max reward
    expect(text).toContain('0.000');
    expect(text).toContain('rewards/coverage/mean');
    expect(text).toContain('rewards/c_acq/mean');
    expect(text).toContain('0.120'); // c_acq's max, 0.04 * 3
    expect(text).not.toContain('rewards/c_fp/mean'); // absent from the records
    // the total's chart is 10 rows high: rows between the title and the next blank line
    expect(text.split('\n\n')[0]!.split('\n').length - 1).toBe(11);
  });
  it('says so when there is nothing to draw', () => {
    expect(rewardCurves([{ step: 1, reward: 0.2 }])).toMatch(/1 update\(s\), nothing to draw/);
  });
});
