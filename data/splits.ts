// Evaluation groups of test instances (method §8; paper Table "seen / unseen user / unseen
// task / both unseen"). A test instance's user is "seen" when that user has at least one
// train instance; its task likewise. Train instances belong to no group.
import type { Instance } from './schema.ts';

/** What the groups need of an instance (raw pairs being split have no more). */
type Placed = Pick<Instance, 'id' | 'userId' | 'taskId' | 'split'>;

export const EVAL_GROUPS = ['seen', 'unseen_user', 'unseen_task', 'both_unseen'] as const;
export type EvalGroup = (typeof EVAL_GROUPS)[number];

/** Users and tasks that have at least one train instance. */
export function trainCoverage(instances: readonly Placed[]): { users: Set<string>; tasks: Set<string> } {
  const train = instances.filter((i) => i.split === 'train');
  return { users: new Set(train.map((i) => i.userId)), tasks: new Set(train.map((i) => i.taskId)) };
}

/** test instance id -> its evaluation group. */
export function evalGroups(instances: readonly Placed[]): Map<string, EvalGroup> {
  const { users, tasks } = trainCoverage(instances);
  const out = new Map<string, EvalGroup>();
  for (const i of instances) {
    if (i.split !== 'test') continue;
    const u = users.has(i.userId);
    const t = tasks.has(i.taskId);
    out.set(i.id, u && t ? 'seen' : t ? 'unseen_user' : u ? 'unseen_task' : 'both_unseen');
  }
  return out;
}
