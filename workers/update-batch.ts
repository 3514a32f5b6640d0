// The update stage's input: the groups of one update -> rewards [numGroups][G] ->
// advantages (method §5) -> one TrainSequence per policy turn, each turn of trajectory i
// carrying A_i. Prompt (memory, simulator) tokens are context only; the trainer puts loss
// on completion tokens.
import { readFileSync } from 'node:fs';
import type { GrpoConfig } from '../configs/schema.ts';
import { groupAdvantages } from '../trainer/grpo/advantages.ts';
import type { RunLayout } from '../checkpoints/layout.ts';
import type { Trajectory } from '../core/types.ts';
import type { GroupFile } from '../checkpoints/group-file.ts';
import type { TrainSequence } from './parts.ts';
import { populationStd } from '../util/stats.ts';

export interface UpdateBatch {
  sequences: TrainSequence[];
  advantageStats: Record<string, number>;
}

export function buildUpdateBatch(groups: readonly GroupFile[], layout: RunLayout, grpo: GrpoConfig, algorithm: 'grpo' | 'ppo' = 'grpo'): UpdateBatch {
  if (groups.length === 0) return { sequences: [], advantageStats: {} };
  if (algorithm === 'ppo') return ppoBatch(groups, layout);
  const rewards = groups.map((g) => g.scores.map((s) => s.reward)); // [numGroups, G]
  const { advantages, stats } = groupAdvantages(rewards, grpo.advantageScaling, grpo.advantageEps); // [numGroups, G]
  const sequences: TrainSequence[] = [];
  let trajectories = -1; // index of the current trajectory in the update
  groups.forEach((g, gi) => {
    g.trajPaths.forEach((rel, i) => {
      const traj = JSON.parse(readFileSync(layout.abs(rel), 'utf8')) as Trajectory;
      const advantage = advantages[gi]?.[i] ?? 0;
      trajectories += 1;
      for (const turn of traj.turns)
        sequences.push({
          promptIds: turn.tokens.promptIds,
          completionIds: turn.tokens.completionIds,
          oldLogprobs: turn.tokens.logprobs,
          advantage,
          trajectory: trajectories,
          ...(turn.constraint ? { constraint: turn.constraint } : {}),
          ...(turn.tokens.policyVersion !== undefined ? { policyVersion: turn.tokens.policyVersion } : {}),
        });
    });
  });
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
function ppoBatch(groups: readonly GroupFile[], layout: RunLayout): UpdateBatch {
  const sequences: TrainSequence[] = [];
  const rewards: number[] = [];
  for (const g of groups)
    g.trajPaths.forEach((rel, i) => {
      const traj = JSON.parse(readFileSync(layout.abs(rel), 'utf8')) as Trajectory;
      const reward = g.scores[i]?.reward ?? 0;
      const trajectory = rewards.length;
      rewards.push(reward);
      for (const turn of traj.turns)
        sequences.push({
          promptIds: turn.tokens.promptIds, completionIds: turn.tokens.completionIds, oldLogprobs: turn.tokens.logprobs, advantage: 0, trajectory, reward,
          ...(turn.constraint ? { constraint: turn.constraint } : {}),
          ...(turn.tokens.policyVersion !== undefined ? { policyVersion: turn.tokens.policyVersion } : {}),
        });
    });
  return { sequences: sequences.filter((s) => s.completionIds.length > 0), advantageStats: { reward_std: populationStd(rewards) } };
}
