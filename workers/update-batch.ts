// The update stage's input read from the run directory: each group's trajectory files and
// scores, in group order, for the trainer's update batch (trainer/update/update-batch.ts).
import type { GrpoConfig } from '../configs/schema.ts';
import type { RunLayout } from '../checkpoints/layout.ts';
import { readTrajectory } from '../core/trajectory-file.ts';
import type { GroupFile } from '../checkpoints/group-file.ts';
import { updateBatch, type UpdateBatch } from '../trainer/update/update-batch.ts';

export type { UpdateBatch };

export function buildUpdateBatch(groups: readonly GroupFile[], layout: RunLayout, grpo: GrpoConfig, algorithm: 'grpo' | 'ppo' = 'grpo'): UpdateBatch {
  const scored = groups.map((g) => ({
    rewards: g.scores.map((s) => s.reward),
    trajectories: g.trajPaths.map((rel) => readTrajectory(layout.abs(rel))),
  }));
  return updateBatch(scored, grpo, algorithm);
}
