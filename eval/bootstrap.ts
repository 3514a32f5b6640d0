// The nonparametric bootstrap over instances (Efron & Tibshirani, "An Introduction to the
// Bootstrap", 1993: ch. 6 standard error, ch. 13 percentile interval), pure. The paper's
// metrics are pooled ratios over a group's instances, so the unit that is resampled is the
// instance (a cluster: all of its episodes travel together); resampling episodes would
// treat repeated episodes of one instance as independent evidence.
//
//   resample b:  n instance indices drawn uniformly with replacement     [B, n]
//   theta*_b   = the statistic on the pooled sums of the drawn instances
//   SE         = sqrt( sum_b (theta*_b - mean theta*)^2 / (B' - 1) )    over the B' defined theta*_b
//   interval   = the (1-level)/2 and (1+level)/2 quantiles of the theta*_b (type 7: linear
//                interpolation between order statistics, numpy's and R's default)
//
// A replicate whose ratio has a zero denominator (no factor in the drawn instances) is
// undefined (null) and left out; `defined` says how many were kept.
import { Rng } from '../util/rng.ts';
import { sampleStd } from '../util/stats.ts';

/** A point estimate with its bootstrap spread; every field null when it cannot be computed. */
export interface Estimate {
  value: number | null;
  se: number | null; // null: the value is null, or fewer than 2 replicates are defined
  lo: number | null;
  hi: number | null;
  defined: number; // replicates with a defined statistic (of `samples`)
  samples: number; // B
}

/** Resampled instance indices, [B][n]; the same plan applied to two methods pairs them. */
export type Resamples = readonly (readonly number[])[];

/** The resamples for `n` instances of one view; a function so tests can hand-pick them. */
export type Resampler = (view: string, n: number) => Resamples;

/** B resamples of n indices from `rng`, row by row. */
export function drawResamples(rng: Rng, n: number, samples: number): number[][] {
  return Array.from({ length: samples }, () => Array.from({ length: n }, () => rng.int(n)));
}

/**
 * Seeded resamples: the stream of a view is Rng.derive(seed, 'bootstrap', view), so every
 * method with the same sorted instances of that view gets the same draws (a paired
 * bootstrap), and a rerun gets the same numbers.
 */
export const seededResampler =
  (seed: number, samples: number): Resampler =>
  (view, n) =>
    drawResamples(Rng.derive(seed, 'bootstrap', view), n, samples);

/** Type-7 quantile of an ascending array (length >= 1), p in [0, 1]. */
export function quantile(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const k = Math.floor(h);
  const a = sorted[k] as number;
  return k + 1 < sorted.length ? a + (h - k) * ((sorted[k + 1] as number) - a) : a;
}

/** SE and percentile interval of the replicates around a point estimate. */
export function summarize(value: number | null, replicates: readonly (number | null)[], level: number): Estimate {
  const xs = replicates.filter((x): x is number => x !== null);
  const none = { value, se: null, lo: null, hi: null, defined: xs.length, samples: replicates.length };
  if (value === null || xs.length < 2) return none;
  const se = sampleStd(xs);
  const sorted = [...xs].sort((a, b) => a - b);
  return { ...none, se, lo: quantile(sorted, (1 - level) / 2), hi: quantile(sorted, (1 + level) / 2) };
}

/** The statistic's replicates: `pool` sums the drawn clusters (with repeats), in draw order. */
export function replicates<C, S>(clusters: readonly C[], resamples: Resamples, pool: (drawn: C[]) => S): S[] {
  return resamples.map((idx) => pool(idx.map((i) => clusters[i] as C)));
}
