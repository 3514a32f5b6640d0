// Online user-state update (method §6). After a group is scored, ONLY its best trajectory
// (highest total reward; ties -> lowest index in the group) may change the shared user
// state: the judge picks which of its final covered slots become memories (name, purpose,
// value, sourceInstance) and whether the profile gains one sentence; the store writes a new
// version on top of the latest (user-store-base.ts). The other trajectories still train the
// policy but change nothing here. Evaluation freezes the state: it never calls this.
import type { Instance } from '../data/schema.ts';
import type { JudgeVerdict, MemoryJudge } from './memory-judge.ts';
import type { Trajectory } from '../core/types.ts';
import { parseSnapshotId, type UserStore } from './user-store.ts';

export interface ScoredTrajectory {
  trajectory: Trajectory;
  reward: number; // total reward R(tau, E) (method §4)
}

export interface StateUpdateResult {
  best: number; // trajectory.index of the trajectory that could update
  verdict: JudgeVerdict;
  version: number; // the user's latest version after the update (unchanged if nothing kept)
  changed: boolean;
}

/** Index (in the group) of the highest-reward trajectory; ties go to the lowest index. */
export function bestOfGroup(group: readonly ScoredTrajectory[]): number {
  if (!group.length) throw new Error('internal: bestOfGroup of an empty group');
  let best = group[0] as ScoredTrajectory;
  for (const g of group) {
    if (!Number.isFinite(g.reward)) throw new Error(`internal: reward of trajectory ${g.trajectory.index} is ${g.reward}`);
    if (g.reward > best.reward || (g.reward === best.reward && g.trajectory.index < best.trajectory.index)) best = g;
  }
  return best.trajectory.index;
}

export async function updateUserState(
  deps: { store: UserStore; judge: MemoryJudge },
  instance: Instance,
  group: readonly ScoredTrajectory[],
): Promise<StateUpdateResult> {
  const best = bestOfGroup(group);
  const trajectory = (group.find((g) => g.trajectory.index === best) as ScoredTrajectory).trajectory;
  const snap = parseSnapshotId(trajectory.snapshotId);
  const snapshot = await deps.store.read(snap.userId, snap.version);
  const verdict = await deps.judge.judge({ instance, trajectory, snapshot });
  const memories = verdict.verdicts
    .filter((v) => v.reason === 'kept')
    .map(({ slot }) => ({ name: slot.name, purpose: slot.purpose, value: slot.value, sourceInstance: instance.id }));
  const before = await deps.store.latestVersion(snap.userId);
  const version = await deps.store.update(snap.userId, { memories, ...(verdict.profileSentence ? { profileSentence: verdict.profileSentence } : {}) });
  return { best, verdict, version, changed: version !== before };
}
