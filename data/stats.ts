// `gsteer data stats`: the shape of a dataset at a glance — split sizes, users, tasks,
// targets per instance, essential share, IEG size, late activation, eval groups (method §8).
import type { Instance, UserState } from './schema.ts';
import { EVAL_GROUPS, evalGroups, type EvalGroup } from './splits.ts';

export interface DatasetStats {
  instances: number;
  bySplit: Record<string, number>;
  users: { total: number; train: number; test: number };
  tasks: { total: number; train: number; test: number };
  targetsPerInstance: { min: number; mean: number; max: number };
  targets: number;
  /** essential targets / all targets */
  essentialShare: number;
  edges: number;
  lateActivatable: number;
  evalGroups: Record<EvalGroup, number>;
  userStates: { users: number; memories: number };
}

const distinct = (xs: readonly Instance[], key: (i: Instance) => string) => new Set(xs.map(key)).size;

export function datasetStats(instances: readonly Instance[], userStates: readonly UserState[] = []): DatasetStats {
  const inSplit = (s: string) => instances.filter((i) => i.split === s);
  const bySplit: Record<string, number> = {};
  for (const i of instances) bySplit[i.split] = (bySplit[i.split] ?? 0) + 1;
  const counts = instances.map((i) => i.targets.length);
  const targets = counts.reduce((a, b) => a + b, 0);
  const all = instances.flatMap((i) => i.targets);
  const groups = Object.fromEntries(EVAL_GROUPS.map((g) => [g, 0])) as Record<EvalGroup, number>;
  for (const g of evalGroups(instances).values()) groups[g] += 1;
  return {
    instances: instances.length,
    bySplit,
    users: {
      total: distinct(instances, (i) => i.userId),
      train: distinct(inSplit('train'), (i) => i.userId),
      test: distinct(inSplit('test'), (i) => i.userId),
    },
    tasks: {
      total: distinct(instances, (i) => i.taskId),
      train: distinct(inSplit('train'), (i) => i.taskId),
      test: distinct(inSplit('test'), (i) => i.taskId),
    },
    targetsPerInstance: {
      min: counts.length ? Math.min(...counts) : 0,
      mean: counts.length ? targets / counts.length : 0,
      max: counts.length ? Math.max(...counts) : 0,
    },
    targets,
    essentialShare: targets ? all.filter((t) => t.essential).length / targets : 0,
    edges: instances.reduce((a, i) => a + i.edges.length, 0),
    lateActivatable: all.filter((t) => t.lateActivatable).length,
    evalGroups: groups,
    userStates: { users: userStates.length, memories: userStates.reduce((a, s) => a + s.memories.length, 0) },
  };
}

export function formatStats(s: DatasetStats): string {
  const t = s.targetsPerInstance;
  return [
    `instances        ${s.instances} (${Object.entries(s.bySplit)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
    `users            ${s.users.total} (train ${s.users.train}, test ${s.users.test})`,
    `tasks            ${s.tasks.total} (train ${s.tasks.train}, test ${s.tasks.test})`,
    `targets          ${s.targets} (per instance min ${t.min}, mean ${t.mean.toFixed(2)}, max ${t.max})`,
    `essential share  ${s.essentialShare.toFixed(3)}`,
    `IEG edges        ${s.edges}`,
    `late-activatable ${s.lateActivatable}`,
    `test groups      ${EVAL_GROUPS.map((g) => `${g} ${s.evalGroups[g]}`).join(', ')}`,
    `user states      ${s.userStates.users} users, ${s.userStates.memories} memories`,
  ].join('\n');
}
