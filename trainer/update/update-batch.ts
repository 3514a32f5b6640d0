// The update's input (method §5, §13): the groups of one update -> rewards [numGroups][G] ->
// advantages -> one TrainSequence per policy turn, each turn of trajectory i carrying A_i
// (GRPO), or its trajectory's reward for the critic's GAE (PPO). Prompt (memory, simulator)
// tokens are context only; the trainer puts loss on completion tokens.
import type { GrpoConfig } from '../../configs/schema.ts';
import type { Trajectory } from '../../core/types.ts';
import { populationStd } from '../../util/stats.ts';
import { groupAdvantages } from '../grpo/advantages.ts';
import type { TrainSequence } from './part.ts';

/** One scored group: its G trajectories and their rewards, in the same order. */
export interface ScoredGroup {
  rewards: number[];
  trajectories: Trajectory[];
}

export interface UpdateBatch {
  sequences: TrainSequence[];
  advantageStats: Record<string, number>;
}

function sequenceOf(traj: Trajectory, turn: Trajectory['turns'][number], advantage: number, trajectory: number, reward?: number): TrainSequence {
  return {
    promptIds: turn.tokens.promptIds,
    completionIds: turn.tokens.completionIds,
    oldLogprobs: turn.tokens.logprobs,
    advantage,
    trajectory,
    ...(reward !== undefined ? { reward } : {}),
    ...(turn.constraint ? { constraint: turn.constraint } : {}),
    // the version that sampled the turn (an in-flight episode may span two; method §5.7), else the trajectory's
    policyVersion: turn.tokens.policyVersion ?? traj.policyVersion,
  };
}

export function updateBatch(groups: readonly ScoredGroup[], grpo: GrpoConfig, algorithm: 'grpo' | 'ppo'): UpdateBatch {
  if (groups.length === 0) return { sequences: [], advantageStats: {} };
  if (algorithm === 'ppo') return ppoBatch(groups);
  const { advantages, stats } = groupAdvantages(
    groups.map((g) => g.rewards),
    grpo.advantageScaling,
    grpo.advantageEps,
  ); // [numGroups, G]
  const sequences: TrainSequence[] = [];
  let trajectory = -1; // index of the current trajectory in the update
  groups.forEach((g, gi) =>
    g.trajectories.forEach((traj, i) => {
      trajectory += 1;
      for (const turn of traj.turns) sequences.push(sequenceOf(traj, turn, advantages[gi]?.[i] ?? 0, trajectory));
    }),
  );
  const advantageStats = {
    'advantages/mean': stats.advantage_mean,
    'advantages/std': stats.advantage_std,
    'advantages/min': stats.advantage_min,
    'advantages/max': stats.advantage_max,
    frac_reward_zero_std: stats.frac_reward_zero_std,
    reward_std: stats.reward_std, // TRL: mean over groups of the within-group std
  };
  return { sequences, advantageStats };
}

/**
 * PPO (method §13): every policy turn with its trajectory's index and reward; the trainer
 * computes per-token advantages with its critic (trainer/ppo/batch.ts). The stats are the rewards'.
 */
function ppoBatch(groups: readonly ScoredGroup[]): UpdateBatch {
  const sequences: TrainSequence[] = [];
  const rewards: number[] = [];
  for (const g of groups)
    g.trajectories.forEach((traj, i) => {
      const reward = g.rewards[i] ?? 0;
      const trajectory = rewards.length;
      rewards.push(reward);
      for (const turn of traj.turns) sequences.push(sequenceOf(traj, turn, 0, trajectory, reward));
    });
  return { sequences: sequences.filter((s) => s.completionIds.length > 0), advantageStats: { reward_std: populationStd(rewards) } };
}
