// Per-update metrics (method §5 list; TRL names where they exist) from the update's group
// files and the trainer's result. Pure: the same groups give the same numbers.
import type { GroupFile } from '../checkpoints/group-file.ts';
import type { UpdateResult } from './payloads.ts';
import type { MetricsRecord } from '../monitor/sink.ts';
import { mean, populationStd } from '../util/stats.ts';

export interface UpdateTiming {
  wallSeconds: number; // since the run (or resume) started
  rolloutSeconds: number; // admission -> group stage done
  policyVersionUsed: number;
  /** Trainer idle before this update: previous update done -> this update's group stage done (0 when it was still busy). */
  waitRolloutsSeconds: number;
  /** Rollout side idle before this update: previous group stage done -> this update admitted (waiting for its policy version). */
  waitTrainerSeconds: number;
  /** G: with it, `episodes/started` counts the update's episodes (all sampled by policyVersionUsed). */
  groupSize?: number;
}

export function updateMetrics(step: number, groups: readonly GroupFile[], result: UpdateResult, t: UpdateTiming): MetricsRecord {
  const kept = groups.filter((g) => !g.dropped);
  const scores = kept.flatMap((g) => g.scores);
  const episodes = kept.flatMap((g) => g.episodes);
  const rewards = scores.map((s) => s.reward);
  const rec: MetricsRecord = {
    step,
    policy_version: result.policyVersion,
    policy_lag: step - 1 - t.policyVersionUsed, // versions between the sampling policy and pi_theta
    reward: mean(rewards),
    reward_std: result.advantageStats.reward_std ?? 0,
    groups: kept.length,
    groups_dropped: groups.length - kept.length,
    trajectories: episodes.length, // scored trajectories the update trained on (dropped groups excluded)
  };
  // Pacing and stragglers (method §5.12): every episode the update started is trained, or
  // dropped with its group (failed or late), never discarded for being stale.
  if (t.groupSize !== undefined) rec['episodes/started'] = groups.length * t.groupSize;
  rec.groups_late = groups.filter((g) => g.late !== undefined).length;
  rec['episodes/cancelled_late'] = groups.reduce((n, g) => n + (g.late ?? 0), 0);
  rec['episodes/reused'] = episodes.filter((e) => e.reused).length;
  // The adapter versions that sampled the trained tokens (each turn carries its own, method §5.7).
  const versions = episodes.flatMap((e) => e.policyVersions ?? []);
  if (versions.length) {
    rec['policy_version/sampled_min'] = Math.min(...versions);
    rec['policy_version/sampled_max'] = Math.max(...versions);
    rec['policy_lag/max'] = step - 1 - Math.min(...versions);
  }
  const components = [...new Set(scores.flatMap((s) => Object.keys(s.components)))].sort();
  for (const c of components) {
    const xs = scores.map((s) => s.components[c] ?? 0);
    rec[`rewards/${c}/mean`] = mean(xs);
    rec[`rewards/${c}/std`] = populationStd(xs); // the spread of this batch, as TRL logs it
  }
  // QREF's evidence filter (method §13): precision / recall pooled over the update's queries.
  if (components.includes('filter_kept')) {
    const sum = (c: string) => scores.reduce((n, s) => n + (s.components[c] ?? 0), 0);
    const [kept, evRetrieved, evKept] = [sum('filter_kept'), sum('filter_evidence_retrieved'), sum('filter_evidence_kept')];
    if (kept > 0) rec['filter/precision'] = evKept / kept;
    if (evRetrieved > 0) rec['filter/recall'] = evKept / evRetrieved;
  }
  for (const [k, v] of Object.entries(result.advantageStats)) if (k !== 'reward_std') rec[k] = v;
  const s = result.stats;
  Object.assign(rec, { loss: s.loss, clip_ratio: s.clip_ratio, grad_norm: s.grad_norm, entropy: s.entropy }, s.diagnostics ?? {});
  const tokens = episodes.map((e) => e.completionTokens);
  rec['completions/mean_length'] = mean(tokens);
  rec['turns/mean'] = mean(episodes.map((e) => e.turns));
  rec['turns/ask'] = mean(episodes.map((e) => e.askCount));
  rec['turns/retrieve'] = mean(episodes.map((e) => e.retrieveCount));
  rec.invalid_rate = mean(episodes.map((e) => (e.termination === 'invalid' ? 1 : 0)));
  rec.nonstop_rate = mean(episodes.map((e) => (e.termination === 'max_turns' ? 1 : 0)));
  // Why episodes were invalid: `duplicate_slot` is the one format failure the policy grammar
  // cannot exclude (vLLM applies only the EBNF; gsteer serve's token filter excludes it too).
  for (const reason of [...new Set(episodes.flatMap((e) => (e.invalidReason ? [e.invalidReason] : [])))].sort())
    rec[`invalid/${reason}`] = mean(episodes.map((e) => (e.invalidReason === reason ? 1 : 0)));
  const turns = episodes.reduce((n, e) => n + e.turns, 0);
  // The share of policy turns cut at rollout.maxTokens (TRL's completions/clipped_ratio): a cut turn
  // ends its episode (invalid, `truncated`), so it is the truncated episodes over all turns (method §5.9).
  rec['completions/clipped_ratio'] = turns ? episodes.filter((e) => e.invalidReason === 'truncated').length / turns : 0;
  if (episodes.some((e) => e.constrainedTurns !== undefined))
    rec['turns/constrained_share'] = turns ? episodes.reduce((n, e) => n + (e.constrainedTurns ?? 0), 0) / turns : 0;
  // Prefill the policy server computed vs took from its prefix cache (0 cached when it does not report it).
  const prompt = episodes.reduce((n, e) => n + (e.promptTokens ?? 0), 0);
  const cached = episodes.reduce((n, e) => n + (e.cachedPromptTokens ?? 0), 0);
  rec['rollout/prompt_tokens'] = prompt;
  rec['rollout/cached_prompt_tokens'] = cached;
  rec['rollout/prefill_tokens'] = prompt - cached;
  rec['rollout/prefix_cache_hit_rate'] = prompt > 0 ? cached / prompt : 0;
  // Timing (not reproducible across runs; everything above is).
  rec.tokens_per_second = s.train_seconds > 0 ? s.num_tokens / s.train_seconds : 0;
  rec['rollout/tokens_per_second'] = t.rolloutSeconds > 0 ? tokens.reduce((a, b) => a + b, 0) / t.rolloutSeconds : 0;
  rec.trajectories_per_second = t.rolloutSeconds > 0 ? episodes.length / t.rolloutSeconds : 0;
  rec['time/wait_rollouts_s'] = t.waitRolloutsSeconds;
  rec['time/wait_trainer_s'] = t.waitTrainerSeconds;
  rec.train_seconds = s.train_seconds;
  rec.rollout_seconds = t.rolloutSeconds;
  rec.wall_time = t.wallSeconds;
  return rec;
}

/** Keys that differ between two identical runs (wall-clock timing; what the prefix cache held depends on it too). */
export const TIMING_KEYS = [
  'episodes/reused', // how many in-flight episodes a resume found finished depends on when the run was killed
  'tokens_per_second',
  'rollout/tokens_per_second',
  'trajectories_per_second',
  'time/wait_rollouts_s',
  'time/wait_trainer_s',
  'train_seconds',
  'rollout_seconds',
  'wall_time',
  'constraint/replay_seconds',
  'constraint/replay_wait_seconds',
  'rollout/cached_prompt_tokens',
  'rollout/prefill_tokens',
  'rollout/prefix_cache_hit_rate',
];

/** Keys whose values depend on wall-clock time or machine load (the fixed list, each LLM role's
 *  latency percentiles `llm/<role>/latency_p50_ms`, and the trainer calls' accounting `trainer/*`:
 *  how many retrieve_future polls a future took, retries, bytes, latency), left out when two runs are compared. */
export const isTimingKey = (key: string): boolean => TIMING_KEYS.includes(key) || /^llm\/[^/]+\/latency_/.test(key) || key.startsWith('trainer/');

/** The metrics of one update without its timing keys: what must match between equal runs. */
export const reproducible = (record: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(record).filter(([k]) => !isTimingKey(k)));
