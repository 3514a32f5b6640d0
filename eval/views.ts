// The instance sets the tables report (method §8, paper Tables 2 and 8): all scored
// episodes, the four disjoint split groups (data/splits.ts), and Table 8's two combined
// views. "The Unseen User results combine User-only unseen and Both unseen instances,
// while the Unseen Task results combine Task-only unseen and Both unseen instances"
// (paper, "Downstream Performance on Unseen Settings"): a combined view pools the counts
// of the union, it is not the mean of the two groups' metrics.
import type { EvalGroup } from '../data/splits.ts';

export const VIEWS = ['overall', 'seen', 'unseen_user', 'unseen_task', 'both_unseen', 'unseen_user_combined', 'unseen_task_combined'] as const;
export type View = (typeof VIEWS)[number];

/** Column labels; the combined views carry the paper's names. */
export const VIEW_LABEL: Record<View, string> = {
  overall: 'Overall',
  seen: 'Seen',
  unseen_user: 'User-only Unseen',
  unseen_task: 'Task-only Unseen',
  both_unseen: 'Both Unseen',
  unseen_user_combined: 'Unseen User',
  unseen_task_combined: 'Unseen Task',
};

const MEMBERS: Record<View, readonly (EvalGroup | null)[] | 'all'> = {
  overall: 'all', // train-split episodes (group null) too, as in the eval report
  seen: ['seen'],
  unseen_user: ['unseen_user'],
  unseen_task: ['unseen_task'],
  both_unseen: ['both_unseen'],
  unseen_user_combined: ['unseen_user', 'both_unseen'],
  unseen_task_combined: ['unseen_task', 'both_unseen'],
};

export function inView(view: View, group: EvalGroup | null): boolean {
  const m = MEMBERS[view];
  return m === 'all' || m.includes(group);
}

/** One line for table notes: how the combined views are formed. */
export const COMBINED_NOTE =
  'Unseen User = user-only unseen ∪ both unseen; Unseen Task = task-only unseen ∪ both unseen (pooled over the union, paper Table 8).';
