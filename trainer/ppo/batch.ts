// From an update's sequences to PPO's per-token advantages and returns (method §13), with the
// pure math of this folder: per trajectory, its policy turns' response tokens are laid end to
// end (prompts and observations between turns are not MDP steps: gae.ts skips them, so
// dropping them is the same GAE), the KL penalty to the reference goes into every token's
// reward and the trajectory's score onto its last token (kl-reward.ts), GAE gives advantages
// (whitened over the batch) and returns (gae.ts), and the results go back onto each turn's
// [prompt + completion] row, 0 on prompt positions.
import type { KlEstimator } from '../../configs/ppo.ts';
import { gaeAdvantageReturn } from './gae.ts';
import { tokenLevelRewards } from './kl-reward.ts';
import { criticMetrics, type CriticMetrics } from './metrics.ts';

export interface PpoSequence {
  promptLength: number;
  length: number; // prompt + completion tokens
  /** Index of the trajectory this turn belongs to; a trajectory's turns come in order. */
  trajectory: number;
}

export interface PpoBatchOptions {
  gamma: number;
  lambda: number;
  whiten: boolean;
  klCoef: number; // 0 = no KL in the reward
  klEstimator: KlEstimator;
}

export interface PpoTargets {
  advantages: number[][]; // [B][T_b]
  returns: number[][]; // [B][T_b]
  metrics: CriticMetrics & { kl_in_reward: number; kl_coef: number };
}

/** [trajectories][their response tokens] -> row positions (sequence b, column t) of each. */
function layout(seqs: readonly PpoSequence[]): { b: number; t: number }[][] {
  const n = Math.max(-1, ...seqs.map((s) => s.trajectory)) + 1;
  const pos: { b: number; t: number }[][] = Array.from({ length: n }, () => []);
  seqs.forEach((s, b) => {
    for (let t = s.promptLength; t < s.length; t++) pos[s.trajectory]!.push({ b, t });
  });
  return pos;
}

/**
 * seqs [B]; logp, refLogp, values [B][T_b] aligned with each sequence's tokens; scores
 * [trajectories]. Every trajectory needs at least one response token.
 */
export function ppoTargets(
  seqs: readonly PpoSequence[],
  logp: number[][],
  refLogp: number[][],
  values: number[][],
  scores: readonly number[],
  o: PpoBatchOptions,
): PpoTargets {
  const pos = layout(seqs);
  if (scores.length !== pos.length) throw new Error(`internal: ${scores.length} scores for ${pos.length} trajectories`);
  const T = Math.max(...pos.map((p) => p.length));
  const gather = (rows: number[][]) => pos.map((p) => [...p.map(({ b, t }) => rows[b]![t]!), ...new Array<number>(T - p.length).fill(0)]); // [N, T]
  const mask = pos.map((p) => [...p.map(() => 1), ...new Array<number>(T - p.length).fill(0)]); // [N, T]
  const lp = gather(logp);
  const v = gather(values);
  const r = tokenLevelRewards(scores, lp, gather(refLogp), mask, o.klCoef, o.klEstimator);
  const g = gaeAdvantageReturn(r.rewards, v, mask, o.gamma, o.lambda, o.whiten);
  const advantages = seqs.map((s) => new Array<number>(s.length).fill(0));
  const returns = seqs.map((s) => new Array<number>(s.length).fill(0));
  pos.forEach((p, j) =>
    p.forEach(({ b, t }, k) => {
      advantages[b]![t] = g.advantages[j]![k]!;
      returns[b]![t] = g.returns[j]![k]!;
    }),
  );
  return { advantages, returns, metrics: { ...criticMetrics(g.returns, v, g.advantages, mask), kl_in_reward: r.klMean, kl_coef: r.klCoef } };
}
