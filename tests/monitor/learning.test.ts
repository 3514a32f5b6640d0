// The learning check of the demo (monitor/learning.ts), worked by hand.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatTrend, quarterTrend, runGroupMeans } from '../../monitor/learning.ts';

describe('quarterTrend', () => {
  it('compares the first and last quarter of group means with a Welch standard error', () => {
    // 8 groups, q = 2: first [0, 0.2] mean 0.1, s^2 = (0.01 + 0.01) / 1 = 0.02;
    // last [0.5, 0.9] mean 0.7, s^2 = (0.04 + 0.04) / 1 = 0.08; se = sqrt(0.02/2 + 0.08/2) = sqrt(0.05)
    const t = quarterTrend([0, 0.2, 9, 9, 9, 9, 0.5, 0.9])!;
    expect(t.quarter).toBe(2);
    expect(t.first).toBeCloseTo(0.1, 12);
    expect(t.last).toBeCloseTo(0.7, 12);
    expect(t.diff).toBeCloseTo(0.6, 12);
    expect(t.se).toBeCloseTo(Math.sqrt(0.05), 12);
    expect(t.learned).toBe(true); // 0.6 > 2 * 0.2236
    // the same spread with a smaller rise is not enough: d = 0.4 < 0.447
    expect(quarterTrend([0, 0.2, 0, 0, 0, 0, 0.3, 0.7])!.learned).toBe(false);
    // 9 groups still give q = 2 (the middle group is in neither quarter)
    expect(quarterTrend([0, 0.2, 5, 5, 5, 5, 5, 0.5, 0.9])!.diff).toBeCloseTo(0.6, 12);
  });

  it('needs at least two groups per quarter', () => {
    expect(quarterTrend([1, 2, 3, 4, 5, 6, 7])).toBeNull();
    expect(formatTrend(null)).toMatch(/too few/);
  });
});

describe('runGroupMeans', () => {
  it('reads the kept groups of a run directory in step order', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-learning-'));
    mkdirSync(join(dir, 'groups'));
    const group = (step: number, g: number, rewards: number[], dropped = false) =>
      writeFileSync(
        join(dir, 'groups', `s${String(step).padStart(6, '0')}-g${g}.json`),
        JSON.stringify({ groupId: `s${String(step).padStart(6, '0')}-g${g}`, step, dropped, scores: rewards.map((reward) => ({ reward, components: {} })) }),
      );
    group(10, 0, [1, 2]);
    group(2, 1, [0, 1]);
    group(2, 0, [4, 6]);
    group(3, 0, [], true);
    expect(runGroupMeans(dir)).toEqual([5, 0.5, 1.5]);
  });
});
