// The update schedule (method §5): cfg.grpo.passes passes over the train instances (or the
// grpo.trainIds subset of them), each pass
// shuffled with its own seeded stream, cut into updates of groupsPerUpdate groups, capped
// at maxUpdates. A pure function of (instances, config), so resume needs only the cursor.
import type { GrpoConfig } from '../configs/schema.ts';
import type { Instance } from '../data/schema.ts';
import { Rng, type RngState } from '../util/rng.ts';

export interface PlannedGroup {
  instanceId: string;
  userId: string;
}

/** [numUpdates][<= groupsPerUpdate] */
export function updateSchedule(instances: readonly Pick<Instance, 'id' | 'userId' | 'split'>[], grpo: GrpoConfig, seed: number): PlannedGroup[][] {
  const train = trainInstances(instances, grpo);
  const order: PlannedGroup[] = [];
  for (let pass = 0; pass < grpo.passes; pass++)
    for (const i of Rng.derive(seed, 'schedule', pass).shuffle(train)) order.push({ instanceId: i.id, userId: i.userId });
  return Array.from({ length: updateCount(train.length, grpo) }, (_, k) => order.slice(k * grpo.groupsPerUpdate, (k + 1) * grpo.groupsPerUpdate));
}

/**
 * Updates of a run with `numTrain` train instances: ceil(passes * numTrain / groupsPerUpdate)
 * (the passes run back to back, so the last update of a pass may take groups of the next),
 * capped at maxUpdates. The one count the controller, the trainer's LR schedule and the
 * progress bar use. E.g. 5 instances, 2 passes, 2 groups per update: 10 groups -> 5 updates.
 */
export function updateCount(numTrain: number, grpo: Pick<GrpoConfig, 'passes' | 'groupsPerUpdate' | 'maxUpdates'>): number {
  const n = Math.ceil((grpo.passes * numTrain) / grpo.groupsPerUpdate);
  return grpo.maxUpdates !== undefined ? Math.min(n, grpo.maxUpdates) : n;
}

/** The instances GRPO trains on: the train split, in file order, or its `grpo.trainIds` subset. */
export function trainInstances<I extends Pick<Instance, 'id' | 'split'>>(instances: readonly I[], grpo: Pick<GrpoConfig, 'trainIds'>): I[] {
  const train = instances.filter((i) => i.split === 'train');
  if (!grpo.trainIds) return train;
  const keep = new Set(grpo.trainIds);
  return train.filter((i) => keep.has(i.id));
}

/** The stream that shuffled the pass holding `step` (recorded in checkpoints). */
export function scheduleRngState(seed: number, step: number, numTrain: number, groupsPerUpdate: number): RngState {
  const pass = numTrain > 0 ? Math.floor(((step - 1) * groupsPerUpdate) / numTrain) : 0;
  return Rng.derive(seed, 'schedule', Math.max(0, pass)).state();
}

/** Sampling seed of rollout i of group g in update `step`: independent of timing and workers. */
export function rolloutSeed(seed: number, step: number, g: number, i: number): number {
  return Rng.derive(seed, 'rollout', step, g, i).nextU32() >>> 1;
}

/**
 * The adapter version rollouts of update `step` sample from: exactly step - 1 - lag (at
 * least 0). Fixed rather than "whatever is loaded", so a run with overlap is reproducible.
 */
export const versionFor = (step: number, maxPolicyLag: number) => Math.max(0, step - 1 - maxPolicyLag);
