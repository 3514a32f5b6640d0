// The downstream score file (`gsteer-downstream` v1, eval/README.md): what `gsteer eval
// downstream` writes and `gsteer eval compare` reads (paper Tables 4 and 8; PDR-Bench's
// PQR protocol). One file per deep-research agent: for every instance and method (the
// "Original Query" row included), the judge's scoring rounds of that method's report, each
// with the P dimensions (goal, content, presentation, actionability) and the Q dimensions
// (depth, logic, clarity) and the judge's weighted overall of each (PQR weights its
// dimensions per task and persona, so the overall is not the plain mean of the four).
//
// Pooling: a report's score is the mean of its rounds (paper: "three independent scoring
// rounds ... report their average"); a view's score is the mean over its reports; the
// spread is the bootstrap over instances (a cluster holds the instance's reports).
import { z } from 'zod';
import { EVAL_GROUPS } from '../data/splits.ts';
import { replicates, summarize, type Estimate, type Resampler } from './bootstrap.ts';
import { inView, type View } from './views.ts';

export const P_DIMS = ['goal', 'content', 'presentation', 'actionability'] as const;
export const Q_DIMS = ['depth', 'logic', 'clarity'] as const;
/** Every column of Table 4, in its order: `p` / `q` are the judge's overall scores. */
export const SCORE_KEYS = ['p', ...P_DIMS, 'q', ...Q_DIMS] as const;
export type ScoreKey = (typeof SCORE_KEYS)[number];

const score = z.number().min(0).max(10); // PQR scores every criterion 0..10
const Round = z
  .object({
    p: z.object({ overall: score, goal: score, content: score, presentation: score, actionability: score }).strict(),
    q: z.object({ overall: score, depth: score, logic: score, clarity: score }).strict(),
  })
  .strict();

export const DownstreamScoresSchema = z
  .object({
    format: z.literal('gsteer-downstream'),
    v: z.literal(1),
    agent: z.object({ name: z.string().min(1), model: z.string().nullable(), standIn: z.boolean() }).strict(), // the DRA
    judge: z.object({ model: z.string().nullable(), standIn: z.boolean(), rounds: z.number().int().min(1) }).strict(),
    methods: z.array(z.object({ name: z.string().min(1), original: z.boolean().default(false), source: z.string().nullable().default(null) }).strict()).min(1), // table row order; `original`: the unrefined query (at most one); `source`: the eval result of its refined queries
    scores: z.array(
      z
        .object({
          instanceId: z.string().min(1),
          group: z.enum(EVAL_GROUPS).nullable(), // null: a train instance (overall only)
          method: z.string().min(1),
          episode: z.number().int().min(0).default(0), // which refined query of the instance (eval.episodesPerInstance)
          rounds: z.array(Round).min(1),
        })
        .strict(),
    ),
  })
  .strict();

export type DownstreamScores = z.infer<typeof DownstreamScoresSchema>;
type ScoreRecord = DownstreamScores['scores'][number];

/** A report's score per column: the mean over the judge's rounds. */
export function reportScore(r: ScoreRecord): Record<ScoreKey, number> {
  const mean = (f: (x: ScoreRecord['rounds'][number]) => number) => r.rounds.reduce((s, x) => s + f(x), 0) / r.rounds.length;
  return {
    p: mean((x) => x.p.overall),
    ...Object.fromEntries(P_DIMS.map((d) => [d, mean((x) => x.p[d])])),
    q: mean((x) => x.q.overall),
    ...Object.fromEntries(Q_DIMS.map((d) => [d, mean((x) => x.q[d])])),
  } as Record<ScoreKey, number>;
}

interface Sums {
  reports: number;
  sum: Record<ScoreKey, number>;
}

const zeroSums = (): Sums => ({ reports: 0, sum: Object.fromEntries(SCORE_KEYS.map((k) => [k, 0])) as Record<ScoreKey, number> });
const addSums = (a: Sums, b: Sums): Sums => ({
  reports: a.reports + b.reports,
  sum: Object.fromEntries(SCORE_KEYS.map((k) => [k, a.sum[k] + b.sum[k]])) as Record<ScoreKey, number>,
});
const means = (s: Sums): Record<ScoreKey, number | null> =>
  Object.fromEntries(SCORE_KEYS.map((k) => [k, s.reports ? s.sum[k] / s.reports : null])) as Record<ScoreKey, number | null>;

/** One method's scores in one view: mean over its reports, with the spread over instances. */
export function downstreamView(
  scores: DownstreamScores,
  method: string,
  view: View,
  resample: Resampler,
  level: number,
): { reports: number; instances: number; est: Record<ScoreKey, Estimate> } {
  const byId = new Map<string, Sums>();
  for (const r of scores.scores) {
    if (r.method !== method || !inView(view, r.group)) continue;
    const one = reportScore(r);
    byId.set(r.instanceId, addSums(byId.get(r.instanceId) ?? zeroSums(), { reports: 1, sum: one }));
  }
  const ids = [...byId.keys()].sort();
  const clusters = ids.map((id) => byId.get(id) as Sums);
  const total = clusters.reduce(addSums, zeroSums());
  const point = means(total);
  const reps = replicates(clusters, resample(view, ids.length), (drawn) => means(drawn.reduce(addSums, zeroSums())));
  const est = Object.fromEntries(
    SCORE_KEYS.map((k) => [
      k,
      summarize(
        point[k],
        reps.map((m) => m[k]),
        level,
      ),
    ]),
  ) as Record<ScoreKey, Estimate>;
  return { reports: total.reports, instances: ids.length, est };
}
