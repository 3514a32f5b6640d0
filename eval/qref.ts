// Evaluation of a QREF refiner (method §13): one or more episodes per question of a split
// (eval.episodesPerInstance, each with its own seed), through the same episode and reward as
// training (rollout/qref/env.ts) under the eval sampling settings (eval.temperature, topP,
// maxTokens). Reported per metric with a bootstrap SE and percentile interval over questions
// (eval/bootstrap.ts: a question's episodes travel together):
//   recall_original, recall_refined, recall_gain, reward, invalid_rate, queries_refined: the
//     mean over questions of each question's episode mean;
//   filter_precision, filter_recall: pooled (summed counts over the drawn questions, then the ratio).
import type { RunConfig } from '../configs/schema.ts';
import { qwen3Tokenizer } from '../core/tokenizer.ts';
import type { Trajectory } from '../core/types.ts';
import { asQrefInstances, filterFrom, loadQrefData, qrefScore, runQrefEpisode, searchFrom } from '../rollout/qref/env.ts';
import { InputError } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import { replicates, seededResampler, summarize, type Estimate, type Resampler } from './bootstrap.ts';
import { openPolicy } from './policy-endpoint.ts';

export const QREF_MEANS = ['recall_original', 'recall_refined', 'recall_gain', 'reward', 'invalid_rate', 'queries_refined'] as const;
export const QREF_POOLED = ['filter_precision', 'filter_recall'] as const;
export type QrefMetric = (typeof QREF_MEANS)[number] | (typeof QREF_POOLED)[number];

/** One episode's numbers (from its reward components). */
export interface QrefEpisodeScore {
  questionId: string;
  reward: number;
  components: Record<string, number>;
}

/** Per question: the mean of each QREF_MEANS over its episodes, and the summed filter counts. */
interface QuestionCluster {
  means: Record<(typeof QREF_MEANS)[number], number>;
  kept: number;
  evidenceKept: number;
  evidenceRetrieved: number;
}

function clusters(scores: readonly QrefEpisodeScore[]): QuestionCluster[] {
  const by = new Map<string, QrefEpisodeScore[]>();
  for (const s of scores) by.set(s.questionId, [...(by.get(s.questionId) ?? []), s]);
  return [...by.keys()].sort().map((id) => {
    const eps = by.get(id)!;
    const mean = (f: (s: QrefEpisodeScore) => number) => eps.reduce((a, s) => a + f(s), 0) / eps.length;
    const c = (k: string) => (s: QrefEpisodeScore) => s.components[k] ?? 0;
    const sum = (k: string) => eps.reduce((a, s) => a + (s.components[k] ?? 0), 0);
    return {
      means: {
        recall_original: mean(c('recall_original')),
        recall_refined: mean(c('recall_refined')),
        recall_gain: mean(c('recall_gain')),
        reward: mean((s) => s.reward),
        invalid_rate: mean(c('invalid')),
        queries_refined: mean(c('queries_refined')),
      },
      kept: sum('filter_kept'),
      evidenceKept: sum('filter_evidence_kept'),
      evidenceRetrieved: sum('filter_evidence_retrieved'),
    };
  });
}

function statistic(drawn: readonly QuestionCluster[], m: QrefMetric): number | null {
  if (drawn.length === 0) return null;
  if (m === 'filter_precision' || m === 'filter_recall') {
    const num = drawn.reduce((a, q) => a + q.evidenceKept, 0);
    const den = drawn.reduce((a, q) => a + (m === 'filter_precision' ? q.kept : q.evidenceRetrieved), 0);
    return den > 0 ? num / den : null;
  }
  return drawn.reduce((a, q) => a + q.means[m], 0) / drawn.length;
}

/** Every metric with its bootstrap spread over questions. */
export function qrefSummary(scores: readonly QrefEpisodeScore[], resample: Resampler, level: number): Record<QrefMetric, Estimate> {
  const cs = clusters(scores);
  const draws = resample('qref', cs.length);
  const out = {} as Record<QrefMetric, Estimate>;
  for (const m of [...QREF_MEANS, ...QREF_POOLED])
    out[m] = summarize(
      statistic(cs, m),
      replicates(cs, draws, (d) => statistic(d, m)),
      level,
    );
  return out;
}

export interface QrefEvalOptions {
  split: string;
  /** Only these question ids of the split (e.g. the demo's grpo.trainIds); each must be in it. */
  ids?: readonly string[];
  adapter?: string;
  policyModel?: string;
  /**
   * The name the episodes' seeds are derived under (Rng.derive(seed, stream, question, k)):
   * default 'qref-eval'. Another name draws episodes independent of the evaluation's, e.g.
   * the QREF demo's pass-rate selection ('qref-select'), so that choosing questions by one
   * sample does not bias the comparison made on the other.
   */
  seedStream?: string;
  log?: (line: string) => void;
}

/** Runs the episodes and scores them. */
export async function evaluateQref(
  cfg: RunConfig,
  o: QrefEvalOptions,
): Promise<{ summary: Record<QrefMetric, Estimate>; episodes: QrefEpisodeScore[]; trajectories: Trajectory[]; model: string }> {
  const data = loadQrefData(cfg);
  if (!['train', 'test', 'all'].includes(o.split)) throw new InputError(`--split must be test, train or all but is "${o.split}"`);
  const inSplit = asQrefInstances(data.questions).filter((q) => o.split === 'all' || q.split === o.split);
  const missing = (o.ids ?? []).filter((id) => !inSplit.some((q) => q.id === id));
  if (missing.length)
    throw new InputError(
      `--ids: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not a question of split "${o.split}" in ${cfg.qref.data.questions}; give ids of that split`,
    );
  const selected = o.ids ? inSplit.filter((q) => o.ids!.includes(q.id)) : inSplit;
  if (selected.length === 0) throw new InputError(`no question with split "${o.split}" in ${cfg.qref.data.questions}`);
  const search = await searchFrom(cfg.qref, data.corpus);
  const filter = await filterFrom(cfg.qref);
  const policy = await openPolicy(cfg, { adapter: o.adapter, policyModel: o.policyModel, log: o.log });
  const ecfg = { ...cfg, rollout: { ...cfg.rollout, temperature: cfg.eval.temperature, topP: cfg.eval.topP, maxTokens: cfg.eval.maxTokens } };
  const jobs = selected.flatMap((inst) => Array.from({ length: cfg.eval.episodesPerInstance }, (_, k) => ({ inst, k })));
  const trajectories: Trajectory[] = new Array(jobs.length);
  const episodes: QrefEpisodeScore[] = new Array(jobs.length);
  try {
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < jobs.length; i = next++) {
        const { inst, k } = jobs[i]!;
        const job = {
          runId: `${cfg.runName}-eval`,
          groupId: `eval-${inst.id}`,
          index: k,
          policyVersion: 0,
          model: policy.model,
          snapshotId: `${inst.userId}@0`,
          seed: Rng.derive(cfg.seed, o.seedStream ?? 'qref-eval', inst.id, k).nextU32() >>> 1,
        };
        const traj = await runQrefEpisode({ policy: policy.client, tokenizer: qwen3Tokenizer(), search, filter }, inst, job, ecfg);
        const s = qrefScore(traj, inst, cfg.qref.reward);
        trajectories[i] = traj;
        episodes[i] = { questionId: inst.id, reward: s.reward, components: s.components };
      }
    };
    await Promise.all(Array.from({ length: Math.min(cfg.eval.concurrency, jobs.length) }, worker));
  } finally {
    await policy.close();
  }
  const b = cfg.eval.bootstrap;
  return { summary: qrefSummary(episodes, seededResampler(cfg.seed, b.samples), b.level), episodes, trajectories, model: policy.model };
}

/** The summary as a table: metric, value, SE, interval. */
export function qrefTable(summary: Record<QrefMetric, Estimate>, level: number): string {
  const f = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  const rows = [...QREF_MEANS, ...QREF_POOLED].map(
    (m) => `| ${m} | ${f(summary[m].value)} | ${f(summary[m].se)} | [${f(summary[m].lo)}, ${f(summary[m].hi)}] |`,
  );
  return [`| metric | value | SE | ${Math.round(level * 100)}% interval |`, '| --- | --- | --- | --- |', ...rows].join('\n');
}

/**
 * b - a of metric m for two evaluations of the same questions with the same seeds (the QREF
 * demo's SFT and PPO rows): the point difference, and its SE from the same question resamples
 * applied to both (the draws qrefSummary uses, so the SEs are comparable); summarize gives
 * no SE when the two did not see the same questions.
 */
export function qrefPairedDifference(
  a: readonly QrefEpisodeScore[],
  b: readonly QrefEpisodeScore[],
  m: QrefMetric,
  resample: Resampler,
  level: number,
): Estimate {
  const ids = (s: readonly QrefEpisodeScore[]) => [...new Set(s.map((e) => e.questionId))].sort().join('\u0000');
  const [ca, cb] = [clusters(a), clusters(b)];
  const point = (x: number | null, y: number | null) => (x === null || y === null ? null : y - x);
  const value = point(statistic(ca, m), statistic(cb, m));
  if (ids(a) !== ids(b)) return summarize(value, [], level);
  const pairs = ca.map((x, i) => ({ a: x, b: cb[i]! }));
  const reps = replicates(pairs, resample('qref', pairs.length), (d) =>
    point(
      statistic(
        d.map((p) => p.a),
        m,
      ),
      statistic(
        d.map((p) => p.b),
        m,
      ),
    ),
  );
  return summarize(value, reps, level);
}
