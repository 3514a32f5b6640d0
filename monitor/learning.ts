// Did the reward go up? The first quarter of a run's groups against its last quarter, with
// the group means as the samples (one GRPO group = G episodes of one instance from one
// snapshot, so its mean reward is one noisy reading of the policy at that step):
//   d  = mean(last) - mean(first)
//   se = sqrt(s_first^2 / q + s_last^2 / q)     (Welch; s^2 the unbiased sample variance)
// and the run "learned" when d > 2 se. Groups are ordered by update step, then group index.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readGroupFile } from '../checkpoints/group-file.ts';
import { mean, sampleVariance } from '../util/stats.ts';

export interface QuarterTrend {
  samples: number; // groups in the run
  quarter: number; // q: groups in each compared quarter
  first: number; // mean of the first q
  last: number; // mean of the last q
  diff: number; // last - first
  se: number; // standard error of diff
  learned: boolean; // diff > 2 se
}

/** A series' first and last quarter, q = floor(n / 4) items each; null when q < 2 (fewer than 8: too short for a spread). */
export function quarters<T>(xs: readonly T[]): { q: number; first: T[]; last: T[] } | null {
  const q = Math.floor(xs.length / 4);
  return q < 2 ? null : { q, first: xs.slice(0, q), last: xs.slice(-q) };
}

/** null when the run is too short for a spread (fewer than 8 groups: quarters of < 2). */
export function quarterTrend(groupMeans: readonly number[]): QuarterTrend | null {
  const qs = quarters(groupMeans);
  if (!qs) return null;
  const { q, first, last } = qs;
  const diff = mean(last) - mean(first);
  const se = Math.sqrt(sampleVariance(first) / q + sampleVariance(last) / q);
  return { samples: groupMeans.length, quarter: q, first: mean(first), last: mean(last), diff, se, learned: diff > 2 * se };
}

/** Mean reward of every kept group of a run directory, in step order. */
export function runGroupMeans(runDir: string): number[] {
  const dir = join(runDir, 'groups');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => readGroupFile(join(dir, f)))
    .filter((g) => !g.dropped && g.scores.length)
    .sort((a, b) => a.step - b.step || a.groupId.localeCompare(b.groupId, 'en', { numeric: true }))
    .map((g) => mean(g.scores.map((s) => s.reward)));
}

export function formatTrend(t: QuarterTrend | null): string {
  if (!t) return 'reward trend: fewer than 8 groups, too few to compare quarters';
  const f = (x: number) => x.toFixed(4);
  return `reward trend: first ${t.quarter} groups ${f(t.first)}, last ${t.quarter} ${f(t.last)}, difference ${f(t.diff)} ± ${f(t.se)} (SE) -> ${t.learned ? 'up by more than 2 SE' : 'not above 2 SE'}`;
}
