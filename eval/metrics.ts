// method §8 intrinsic metrics, pure. Paper ("Evaluation", "Rollout and Factor Extraction"):
// each reference target is compared with its most similar extracted factor (coverage), and
// each extracted factor with its most similar reference target (precision); the two
// directions are computed independently (no one-to-one matching here, unlike the reward's
// Hungarian M*). Counts and weights are POOLED over the episodes of a group, never
// averaged per instance.
//
//   covered(i)  = max_j cos(phi(g_i), phi(f_j)) >= tau          (targets i, factors j)
//   matched(j)  = max_i cos(phi(g_i), phi(f_j)) >= tau
//   Precision   = sum matched / sum factors        Recall = sum covered / sum targets
//   F1          = 2PR / (P + R)
//   WCov        = sum w_i [covered] / sum w_i     E-WCov = the same over essential targets
//
// A ratio with a zero denominator (no factors at all, no essential targets) is null:
// undefined, not zero.

/** One episode reduced to what the metrics need: best cosines per target and per factor. */
export interface EpisodeSims {
  targets: { weight: number; essential: boolean; best: number | null }[]; // best over factors; null = no factors
  factorBest: number[]; // per extracted factor: best cosine over targets
  askCount: number;
  retrieveCount: number;
  stopped: boolean; // termination = stop (q* exists)
}

/** Pooled sums over a group of episodes; every metric is a ratio of two of them. */
export interface PooledCounts {
  episodes: number;
  stopped: number;
  targets: number;
  coveredTargets: number;
  factors: number;
  matchedFactors: number;
  weight: number;
  coveredWeight: number;
  essentialWeight: number;
  essentialCoveredWeight: number;
  asks: number;
  retrieves: number;
}

export interface GroupMetrics extends PooledCounts {
  precision: number | null;
  recall: number | null;
  f1: number | null;
  wcov: number | null;
  ewcov: number | null;
  meanAsk: number | null;
  meanRetrieve: number | null;
}

/** max_j sims[i][j] per row; null for a row without columns. `sims` is [N, F]. */
export function rowBest(sims: number[][]): (number | null)[] {
  return sims.map((row) => (row.length ? Math.max(...row) : null));
}

/** max_i sims[i][j] per column; `sims` is [N, F], the result [F]. */
export function colBest(sims: number[][], nFactors: number): number[] {
  const out = new Array<number>(nFactors).fill(-Infinity);
  for (const row of sims) row.forEach((s, j) => (out[j] = Math.max(out[j] as number, s)));
  return out;
}

/** The counts one episode adds at threshold `tau`. */
export function episodeCounts(e: EpisodeSims, tau: number): PooledCounts {
  const cov = e.targets.map((t) => t.best !== null && t.best >= tau);
  const sumW = (pick: (i: number) => boolean) => e.targets.reduce((s, t, i) => s + (pick(i) ? t.weight : 0), 0);
  return {
    episodes: 1,
    stopped: e.stopped ? 1 : 0,
    targets: e.targets.length,
    coveredTargets: cov.filter(Boolean).length,
    factors: e.factorBest.length,
    matchedFactors: e.factorBest.filter((s) => s >= tau).length,
    weight: sumW(() => true),
    coveredWeight: sumW((i) => cov[i] as boolean),
    essentialWeight: sumW((i) => (e.targets[i] as { essential: boolean }).essential),
    essentialCoveredWeight: sumW((i) => (e.targets[i] as { essential: boolean }).essential && (cov[i] as boolean)),
    asks: e.askCount,
    retrieves: e.retrieveCount,
  };
}

export const ZERO_COUNTS: PooledCounts = {
  episodes: 0,
  stopped: 0,
  targets: 0,
  coveredTargets: 0,
  factors: 0,
  matchedFactors: 0,
  weight: 0,
  coveredWeight: 0,
  essentialWeight: 0,
  essentialCoveredWeight: 0,
  asks: 0,
  retrieves: 0,
};

export function addCounts(a: PooledCounts, b: PooledCounts): PooledCounts {
  const out = { ...a };
  for (const k of Object.keys(ZERO_COUNTS) as (keyof PooledCounts)[]) out[k] = a[k] + b[k];
  return out;
}

const ratio = (num: number, den: number): number | null => (den > 0 ? num / den : null);

/** Metrics from pooled counts (method §8). */
export function metricsOf(c: PooledCounts): GroupMetrics {
  const precision = ratio(c.matchedFactors, c.factors);
  const recall = ratio(c.coveredTargets, c.targets);
  const f1 = precision === null || recall === null ? null : precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return {
    ...c,
    precision,
    recall,
    f1,
    wcov: ratio(c.coveredWeight, c.weight),
    ewcov: ratio(c.essentialCoveredWeight, c.essentialWeight),
    meanAsk: ratio(c.asks, c.episodes),
    meanRetrieve: ratio(c.retrieves, c.episodes),
  };
}

/** method §8: pool the episodes' counts, then take the ratios. */
export function pooledMetrics(episodes: readonly EpisodeSims[], tau: number): GroupMetrics {
  return metricsOf(episodes.reduce((acc, e) => addCounts(acc, episodeCounts(e, tau)), ZERO_COUNTS));
}
