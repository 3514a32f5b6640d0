// The partial-group policy (method §5.12, grpo.groupDeadlineMs): a group whose episodes are
// not all finished `deadlineMs` after the first group of its update finished is *late*
// (one straggler may not hold the others longer than that): it is dropped from
// the update (no advantages, no user-state update, counted as groups_late), its unfinished
// episodes are cancelled, and the update trains on the other groups instead of waiting.
//
// Who decides is settled by one Redis key per group, set once (SET NX): the controller
// claims `late`, the group stage claims `stage` before it starts; whoever comes first wins,
// so a group is never both trained and dropped. Unfinished rollouts are cancelled through a
// pub/sub message to every rollout worker (BullMQ's Worker.cancelJob aborts the processor);
// one not yet started sees the claim when it starts. The controller's cut: late-cut.ts.
import type { Job, Worker } from 'bullmq';
import type { RedisClient } from '../util/redis.ts';
import { runNamespace } from '../checkpoints/run-keys.ts';

export type Claim = 'late' | 'stage';

/** The claim key of a group (under the run's namespace, so the run's cleanup removes it). */
export const claimKey = (prefix: string, runId: string, groupId: string) => `${runNamespace(prefix, runId)}:claim:${groupId}`;

/** The pub/sub channel that carries the ids of rollout jobs to cancel. */
export const cancelChannel = (prefix: string, runId: string) => `${runNamespace(prefix, runId)}:cancel`;

/** Claim the group for `who`; returns who holds it now (`who` when this call won, or an attempt of it earlier). */
export async function claimGroup(redis: RedisClient, key: string, who: Claim): Promise<Claim> {
  const won = await redis.set(key, who, 'NX');
  return won === 'OK' ? who : (((await redis.get(key)) as Claim | null) ?? who);
}

/** Whether the group of a rollout was claimed late (only asked when a deadline is set). */
export async function isLate(redis: RedisClient, key: string): Promise<boolean> {
  return (await redis.get(key)) === 'late';
}

/** Tell every rollout worker to cancel these jobs (those it holds; the others are not there). */
export async function publishCancel(redis: RedisClient, channel: string, jobIds: readonly string[]): Promise<void> {
  await redis.publish(channel, JSON.stringify(jobIds));
}

/** Cancel the listed jobs that these workers hold, on every message of the channel. */
export async function followCancels(sub: RedisClient, channel: string, workers: readonly Worker[]): Promise<void> {
  sub.on('message', (ch: string, msg: string) => {
    if (ch !== channel) return;
    for (const id of JSON.parse(msg) as string[]) for (const w of workers) w.cancelJob(id, 'late: its group passed grpo.groupDeadlineMs');
  });
  await sub.subscribe(channel);
}

/** The episodes of a waiting group job not finished yet (its rollout children still pending). */
export async function unfinishedEpisodes(group: Job): Promise<number> {
  return (await group.getDependenciesCount({ unprocessed: true })).unprocessed ?? 0;
}

/** Reject with `reason` as soon as the signal aborts; otherwise the promise's own outcome. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, reason: () => Error): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(reason());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reason());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
