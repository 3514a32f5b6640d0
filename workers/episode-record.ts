// What the rollout worker keeps true of a trajectory before it goes to disk, and what it
// accepts from disk instead of sampling again:
//   - every policy turn's tokens carry the adapter version that sampled them (method §5.7):
//     the rollout job's; a part that reports another version for a turn has mixed two
//     policies in one episode, which is refused (the rule: an episode finishes on the
//     adapter it started with, even when a newer one is loaded meanwhile);
//   - a trajectory file already at the job's path (a resumed run's in-flight episode that
//     had finished before the kill, or a retried job whose worker died after writing it) is
//     the same episode when it is whole (core/trajectory-file.ts) and names the same
//     run, instance, adapter version and user-state snapshot: the seed is a function of those
//     and the position (method §10.1), so sampling again would give the same tokens. Anything
//     else is sampled again.
import type { Trajectory } from '../core/types.ts';
import { readWholeTrajectory } from '../core/trajectory-file.ts';
import type { RolloutJob } from './payloads.ts';

/** The trajectory with every turn tagged with the job's adapter version; throws on a turn sampled by another. */
export function tagVersions(traj: Trajectory, job: RolloutJob): Trajectory {
  const turns = traj.turns.map((t) => {
    const v = t.tokens.policyVersion;
    if (v !== undefined && v !== job.policyVersion)
      throw new Error(
        `rollout ${job.groupId}/t${job.index}: turn ${t.index} was sampled by adapter version ${v}, but the job samples version ${job.policyVersion} (${job.model}); an episode must finish on the adapter it started with`,
      );
    return { ...t, tokens: { ...t.tokens, policyVersion: job.policyVersion } };
  });
  return { ...traj, turns };
}

/** The finished episode already at `path` for this job, or null (absent, torn, or another episode). */
export function reusableTrajectory(path: string, job: RolloutJob): Trajectory | null {
  const t = readWholeTrajectory(path, job.groupId, job.index);
  const same =
    t &&
    t.runId === job.runId &&
    t.instanceId === job.instanceId &&
    t.policyVersion === job.policyVersion &&
    t.snapshotId === job.snapshotId &&
    t.turns.every((turn) => turn.tokens.policyVersion === job.policyVersion);
  return same ? t : null;
}
