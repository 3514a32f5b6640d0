// The intrinsic metrics (method §8) of one view with their bootstrap spread over instances
// (eval/bootstrap.ts). Pooling as in metrics.ts: every episode's counts are summed and the
// ratios taken once, so with several episodes per instance (eval.episodesPerInstance) an
// instance adds all of its episodes (E episodes each: every instance weighs the same, as
// with one). The bootstrap resamples instances, each with all of its episodes.
import { replicates, seededResampler, summarize, type Estimate, type Resampler } from './bootstrap.ts';
import { addCounts, episodeCounts, metricsOf, pooledMetrics, ZERO_COUNTS, type GroupMetrics, type PooledCounts } from './metrics.ts';
import { toSims, type ScoredEpisode } from './score.ts';
import { inView, VIEWS, type View } from './views.ts';

/** The pooled metrics that get a spread (paper Table 2 columns). */
export const METRICS = ['wcov', 'ewcov', 'precision', 'recall', 'f1', 'meanAsk', 'meanRetrieve'] as const;
export type MetricKey = (typeof METRICS)[number];

export interface ViewResult {
  metrics: GroupMetrics; // the point estimate: pooled over the view's episodes, as in the report
  instances: string[]; // the view's instance ids, sorted: the clusters the resamples index
  est: Record<MetricKey, Estimate>;
  reps: GroupMetrics[]; // [B] the metrics of each resample (for paired statistics, e.g. Figure 3b)
}

/** Counts per instance of a view (sum over its episodes), instances in sorted id order. */
export function instanceCounts(scored: readonly ScoredEpisode[], tau: number, view: View): { ids: string[]; counts: PooledCounts[] } {
  const byId = new Map<string, PooledCounts>();
  for (const s of scored) if (inView(view, s.group)) byId.set(s.instanceId, addCounts(byId.get(s.instanceId) ?? ZERO_COUNTS, episodeCounts(toSims(s), tau)));
  const ids = [...byId.keys()].sort();
  return { ids, counts: ids.map((id) => byId.get(id) as PooledCounts) };
}

// Replicates sum counts as plain vectors [12]: B x views x thresholds of them add up.
const KEYS = Object.keys(ZERO_COUNTS) as (keyof PooledCounts)[];
const toVec = (c: PooledCounts) => Float64Array.from(KEYS, (k) => c[k]);
const at = (v: Float64Array, k: keyof PooledCounts) => v[KEYS.indexOf(k)] as number;
/** A literal (not Object.fromEntries): V8 keeps it a fast object, which metricsOf spreads B times. */
const fromVec = (v: Float64Array): PooledCounts => ({
  episodes: at(v, 'episodes'),
  stopped: at(v, 'stopped'),
  targets: at(v, 'targets'),
  coveredTargets: at(v, 'coveredTargets'),
  factors: at(v, 'factors'),
  matchedFactors: at(v, 'matchedFactors'),
  weight: at(v, 'weight'),
  coveredWeight: at(v, 'coveredWeight'),
  essentialWeight: at(v, 'essentialWeight'),
  essentialCoveredWeight: at(v, 'essentialCoveredWeight'),
  asks: at(v, 'asks'),
  retrieves: at(v, 'retrieves'),
});
function sumVecs(vs: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(KEYS.length);
  for (const v of vs) for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) + (v[i] as number);
  return out;
}

export function viewResult(scored: readonly ScoredEpisode[], tau: number, view: View, resample: Resampler, level: number): ViewResult {
  const metrics = pooledMetrics(scored.filter((s) => inView(view, s.group)).map(toSims), tau);
  const { ids, counts } = instanceCounts(scored, tau, view);
  const reps = replicates(counts.map(toVec), resample(view, ids.length), (drawn) => metricsOf(fromVec(sumVecs(drawn))));
  const est = Object.fromEntries(
    METRICS.map((k) => [
      k,
      summarize(
        metrics[k],
        reps.map((r) => r[k]),
        level,
      ),
    ]),
  ) as Record<MetricKey, Estimate>;
  return { metrics, instances: ids, est, reps };
}

/** Every view at one threshold. */
export function viewResults(scored: readonly ScoredEpisode[], tau: number, resample: Resampler, level: number): Record<View, ViewResult> {
  return Object.fromEntries(VIEWS.map((v) => [v, viewResult(scored, tau, v, resample, level)])) as Record<View, ViewResult>;
}

export interface BootstrapSettings {
  samples: number; // B (eval.bootstrap.samples)
  level: number; // percentile interval coverage (eval.bootstrap.level)
  seed: number; // the run seed; each view draws from Rng.derive(seed, 'bootstrap', view)
}

/** What a saved eval result keeps of the spread: per threshold and view, the estimates. */
export interface SpreadSection extends BootstrapSettings {
  unit: 'instance';
  results: { threshold: number; views: Record<View, { instances: number; est: Record<MetricKey, Estimate> }> }[];
}

export function spreadSection(scored: readonly ScoredEpisode[], taus: readonly number[], b: BootstrapSettings): SpreadSection {
  const resample = seededResampler(b.seed, b.samples);
  return {
    unit: 'instance',
    ...b,
    results: taus.map((threshold) => {
      const all = viewResults(scored, threshold, resample, b.level);
      return {
        threshold,
        views: Object.fromEntries(VIEWS.map((v) => [v, { instances: all[v].instances.length, est: all[v].est }])) as SpreadSection['results'][number]['views'],
      };
    }),
  };
}
