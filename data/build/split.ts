// The paper's split protocol (Table 1): 70/30 train/test over (user, task) pairs with four
// test groups. Held-out users and tasks are drawn by seed; every pair of a held-out user or
// task is test (unseen_user / unseen_task / both_unseen, data/splits.ts); test pairs of
// seen users and tasks ("seen") are then drawn, in a seeded order, until the test share
// reaches testFraction (at least `minSeen` of them), never taking a user's or task's last
// training pair. Pairs with a fixed `split` keep it; a user or task with a fixed train pair
// is never held out.
import { Rng } from '../../util/rng.ts';
import { evalGroups, type EvalGroup } from '../splits.ts';

export interface SplitOptions {
  seed: number;
  /** Share of pairs in test (paper: 45 of 150 = 0.3). */
  testFraction: number;
  /** Share of users held out (paper: 22 of 150 instances have an unseen user, about 4 of 25 users). */
  heldOutUsers: number;
  /** Share of tasks held out (paper: 20 instances have an unseen task, about 4 of 30 tasks). */
  heldOutTasks: number;
  /** Seen test pairs at least (paper: 13). */
  minSeen: number;
}

export const PAPER_SPLIT: Omit<SplitOptions, 'seed'> = { testFraction: 0.3, heldOutUsers: 0.15, heldOutTasks: 0.13, minSeen: 1 };

export interface SplitPair {
  id: string;
  userId: string;
  taskId: string;
  split?: 'train' | 'test';
}

export interface Placement {
  id: string;
  userId: string;
  taskId: string;
  split: 'train' | 'test';
  group: EvalGroup | null;
}

function shuffled<T>(xs: readonly T[], rng: Rng): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** round(share * n), at least 1 when share > 0 and there are 2 or more to choose from. */
const howMany = (share: number, n: number) => (share > 0 && n >= 2 ? Math.max(1, Math.round(share * n)) : 0);

export function splitPairs(pairs: readonly SplitPair[], o: SplitOptions): Placement[] {
  const distinct = (key: 'userId' | 'taskId') => [...new Set(pairs.map((p) => p[key]))];
  const fixedTrain = (key: 'userId' | 'taskId') => new Set(pairs.filter((p) => p.split === 'train').map((p) => p[key]));
  const pick = (key: 'userId' | 'taskId', share: number, label: string) => {
    const all = distinct(key);
    const free = all.filter((x) => !fixedTrain(key).has(x));
    return new Set(shuffled(free, Rng.derive(o.seed, 'split', label)).slice(0, howMany(share, all.length)));
  };
  const users = pick('userId', o.heldOutUsers, 'users');
  const tasks = pick('taskId', o.heldOutTasks, 'tasks');
  const split = new Map<string, 'train' | 'test'>();
  for (const p of pairs) split.set(p.id, p.split ?? (users.has(p.userId) || tasks.has(p.taskId) ? 'test' : 'train'));
  const trainCount = (key: 'userId' | 'taskId', v: string) => pairs.filter((p) => p[key] === v && split.get(p.id) === 'train').length;
  const tested = () => [...split.values()].filter((s) => s === 'test').length;
  const goal = Math.round(o.testFraction * pairs.length);
  let seen = 0;
  for (const p of shuffled(
    pairs.filter((q) => q.split === undefined && split.get(q.id) === 'train'),
    Rng.derive(o.seed, 'split', 'seen'),
  )) {
    if (tested() >= goal && seen >= o.minSeen) break;
    if (trainCount('userId', p.userId) < 2 || trainCount('taskId', p.taskId) < 2) continue;
    split.set(p.id, 'test');
    seen++;
  }
  const placed = pairs.map((p) => ({ id: p.id, userId: p.userId, taskId: p.taskId, split: split.get(p.id) as 'train' | 'test' }));
  const groups = evalGroups(placed);
  return placed.map((p) => ({ ...p, group: groups.get(p.id) ?? null }));
}
