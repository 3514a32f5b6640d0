// Scoring finished episodes (method §8): q* -> extracted factors -> cosines between every
// target text g_i (description + rubric criterion, data/schema.ts targetText) and every
// factor, with the same encoder phi as the reward. An episode without q* (invalid or
// non-stop) has no factors: its targets count, uncovered. What is kept per episode is
// enough to recompute the metrics at any threshold (the sweep) without re-encoding.
import type { Instance } from '../data/schema.ts';
import { targetText } from '../data/schema.ts';
import type { EvalGroup } from '../data/splits.ts';
import { cosine, type Encoder } from '../core/encoder.ts';
import type { Termination } from '../core/types.ts';
import type { Progress } from '../util/progress.ts';
import type { FactorExtractor } from './extractor.ts';
import type { EpisodeSims } from './metrics.ts';

/** The fields of a trajectory that evaluation reads (a full Trajectory has them all). */
export interface EpisodeOutcome {
  instanceId: string;
  termination: Termination;
  refinedQuery: string | null;
  askCount: number;
  retrieveCount: number;
}

export interface ScoredEpisode extends EpisodeOutcome {
  group: EvalGroup | null; // null: a train instance (counted in "overall" only)
  factors: { text: string; bestCosine: number | null; bestTarget: string | null }[];
  targets: { id: string; weight: number; essential: boolean; bestCosine: number | null; bestFactor: string | null }[];
}

/** argmax/max of a list; null for an empty one (ties: the first). */
function best(xs: number[]): { i: number; v: number } | null {
  if (xs.length === 0) return null;
  let i = 0;
  for (let k = 1; k < xs.length; k++) if ((xs[k] as number) > (xs[i] as number)) i = k;
  return { i, v: xs[i] as number };
}

export async function scoreEpisode(
  ep: EpisodeOutcome,
  instance: Instance,
  group: EvalGroup | null,
  extractor: FactorExtractor,
  encoder: Encoder,
): Promise<ScoredEpisode> {
  const factors = ep.refinedQuery && ep.refinedQuery.trim() ? await extractor.extract(ep.refinedQuery, instance) : [];
  const vecs = await encoder.embed([...instance.targets.map(targetText), ...factors]);
  const N = instance.targets.length;
  const tv = vecs.slice(0, N);
  const fv = vecs.slice(N);
  const sims = tv.map((t) => fv.map((f) => cosine(t, f))); // [N, F]
  return {
    instanceId: ep.instanceId,
    termination: ep.termination,
    refinedQuery: ep.refinedQuery,
    askCount: ep.askCount,
    retrieveCount: ep.retrieveCount,
    group,
    factors: factors.map((text, j) => {
      const b = best(sims.map((row) => row[j] as number));
      return { text, bestCosine: b?.v ?? null, bestTarget: b ? (instance.targets[b.i]?.id ?? null) : null };
    }),
    targets: instance.targets.map((t, i) => {
      const b = best(sims[i] as number[]);
      return { id: t.id, weight: t.weight, essential: t.essential, bestCosine: b?.v ?? null, bestFactor: b ? (factors[b.i] ?? null) : null };
    }),
  };
}

/** What metrics.ts needs from a scored episode. */
export function toSims(s: ScoredEpisode): EpisodeSims {
  return {
    targets: s.targets.map((t) => ({ weight: t.weight, essential: t.essential, best: t.bestCosine })),
    // A factor with no target to compare (an instance without targets) matches nothing.
    factorBest: s.factors.map((f) => f.bestCosine ?? -Infinity),
    askCount: s.askCount,
    retrieveCount: s.retrieveCount,
    stopped: s.termination === 'stop',
  };
}

/** Score many episodes with bounded concurrency, in input order. */
export async function scoreAll(
  eps: readonly EpisodeOutcome[],
  lookup: (id: string) => { instance: Instance; group: EvalGroup | null },
  extractor: FactorExtractor,
  encoder: Encoder,
  concurrency: number,
  progress?: Progress,
): Promise<ScoredEpisode[]> {
  const out = new Array<ScoredEpisode>(eps.length);
  let next = 0;
  const worker = async () => {
    while (next < eps.length) {
      const k = next++;
      const ep = eps[k] as EpisodeOutcome;
      const { instance, group } = lookup(ep.instanceId);
      out[k] = await scoreEpisode(ep, instance, group, extractor, encoder);
      progress?.tick();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, eps.length)) }, worker));
  return out;
}
