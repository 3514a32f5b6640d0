// Scored episodes written directly (no encoder, no extractor) for the spread and compare
// tests: a covered target / matched factor has best cosine 0.9, any other 0.1, so at every
// threshold in (0.1, 0.9] the coverage is exactly what the record says.
import type { EvalGroup } from '../../data/splits.ts';
import { buildReport, type EvalReport } from '../../eval/report.ts';
import type { ScoredEpisode } from '../../eval/score.ts';

export const HIT = 0.9;
export const MISS = 0.1;

/** targets: [weight, essential, covered]; factors: matched or not. */
export function episode(
  instanceId: string,
  group: EvalGroup | null,
  targets: [number, boolean, boolean][],
  factors: boolean[],
  asks = 0,
  retrieves = 0,
): ScoredEpisode {
  return {
    instanceId,
    group,
    termination: 'stop',
    refinedQuery: `q* of ${instanceId}`,
    askCount: asks,
    retrieveCount: retrieves,
    factors: factors.map((m, j) => ({ text: `factor ${j}`, bestCosine: m ? HIT : MISS, bestTarget: 't0' })),
    targets: targets.map(([weight, essential, cov], i) => ({ id: `t${i}`, weight, essential, bestCosine: cov ? HIT : MISS, bestFactor: 'factor 0' })),
  };
}

/** A saved eval result (v2) of these episodes, as gsteer eval writes it. */
export function resultOf(
  episodes: ScoredEpisode[],
  baseline: string,
  label: string,
  o: { threshold?: number; sweep?: number[]; seed?: number; samples?: number } = {},
): EvalReport {
  return buildReport(episodes, {
    threshold: o.threshold ?? 0.55,
    sweep: o.sweep ?? [],
    method: { baseline, label, model: 'gsteer-eval', source: 'episodes' },
    encoder: 'embedded-hash',
    extractor: 'rule',
    episodesPerInstance: 1,
    bootstrap: { samples: o.samples ?? 200, level: 0.95, seed: o.seed ?? 42 },
  });
}
