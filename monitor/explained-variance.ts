// Did the critic learn? Its explained variance over the first quarter of a run's updates
// against its last quarter, pooled within each quarter:
//   EV_Q = 1 - sum_{u in Q} Var_u(G - V) / sum_{u in Q} Var_u(G)     (a ratio of sums)
//   d    = EV_last - EV_first
//   se   = the bootstrap SE of d: the updates of each quarter resampled with replacement
//          (B draws from Rng.derive(seed, 'explained-variance')), d recomputed on each
// and the critic "learned" when d > 2 se. Why pooled: one update of PPO on a few episodes can
// have (nearly) equal returns, Var(G) ~ 1e-5, and its own ratio -100 or -1000 (verl's epsilon
// keeps it finite, not meaningful); a mean of per-update ratios is then that one update. Pooled,
// an update counts by the return variance it has to explain: the fraction of the quarter's
// within-batch return variance the critic explains.
import { Rng } from '../util/rng.ts';
import { sampleStd } from '../util/stats.ts';
import { quarters } from './learning.ts';

/** One update's Var(G) and Var(G - V) (critic/returns_var, critic/residual_var). */
export interface CriticVariances {
  returnsVar: number;
  residualVar: number;
}

export interface ExplainedVarianceTrend {
  updates: number;
  quarter: number; // q: updates in each compared quarter
  first: number; // pooled EV of the first q
  last: number; // pooled EV of the last q
  diff: number; // last - first
  se: number; // bootstrap SE of diff
  learned: boolean; // diff > 2 se
}

/** 1 - sum Var(G - V) / sum Var(G); null when the returns do not vary at all. */
export function pooledExplainedVariance(us: readonly CriticVariances[]): number | null {
  const g = us.reduce((a, u) => a + u.returnsVar, 0);
  return g > 0 ? 1 - us.reduce((a, u) => a + u.residualVar, 0) / g : null;
}

/** null when the run is too short (fewer than 8 updates: quarters of < 2) or a quarter's returns never vary. */
export function explainedVarianceTrend(us: readonly CriticVariances[], seed: number, samples = 1000): ExplainedVarianceTrend | null {
  const qs = quarters(us);
  if (!qs) return null;
  const { q, first: firstQ, last: lastQ } = qs;
  const first = pooledExplainedVariance(firstQ);
  const last = pooledExplainedVariance(lastQ);
  if (first === null || last === null) return null;
  const rng = Rng.derive(seed, 'explained-variance');
  const draw = (xs: readonly CriticVariances[]) => Array.from({ length: xs.length }, () => xs[rng.int(xs.length)] as CriticVariances);
  const diffs: number[] = []; // [B'] replicates with both quarters defined
  for (let b = 0; b < samples; b++) {
    const f = pooledExplainedVariance(draw(firstQ));
    const l = pooledExplainedVariance(draw(lastQ));
    if (f !== null && l !== null) diffs.push(l - f);
  }
  const se = diffs.length >= 2 ? sampleStd(diffs) : Number.NaN;
  const diff = last - first;
  return { updates: us.length, quarter: q, first, last, diff, se, learned: diff > 2 * se };
}

/** The per-update records' variances, in order; null when a record lacks them (a run from before they were logged). */
export function criticVariancesOf(records: readonly Record<string, unknown>[]): CriticVariances[] | null {
  const rows = records.filter((r) => typeof r['critic/vf_explained_var'] === 'number');
  const us = rows.map((r) => ({ returnsVar: r['critic/returns_var'], residualVar: r['critic/residual_var'] }));
  return us.every((u) => typeof u.returnsVar === 'number' && typeof u.residualVar === 'number') ? (us as CriticVariances[]) : null;
}

export function formatExplainedVarianceTrend(t: ExplainedVarianceTrend | null): string {
  const name = 'PPO critic explained variance (pooled over each quarter of updates)';
  if (!t) return `${name}: fewer than 8 updates, or a quarter whose returns never vary: too few to compare quarters`;
  const f = (x: number) => x.toFixed(4);
  return `${name}: first ${t.quarter} updates ${f(t.first)}, last ${t.quarter} ${f(t.last)}, difference ${f(t.diff)} ± ${f(t.se)} (bootstrap SE over updates) -> ${t.learned ? 'up by more than 2 SE' : 'not above 2 SE'}`;
}

/** Pooled EV of every window of w consecutive updates: [n - w + 1], the i-th over updates i+1..i+w (null: no return variance). */
export function pooledWindows(us: readonly CriticVariances[], w: number): (number | null)[] {
  return us.length < w ? [] : Array.from({ length: us.length - w + 1 }, (_, i) => pooledExplainedVariance(us.slice(i, i + w)));
}
