// Give a dead worker's jobs back at once. Each worker process records the ids of its BullMQ
// workers under `<run namespace>:worker:<host>:<pid>` (checkpoints/run-keys.ts); a job's lock holds the token
// `<workerId>:<n>` of the worker processing it. When the supervisor sees a child die, it
// moves every active job locked by that child back to waiting (BullMQ's own
// moveJobFromActiveToWait, with the dead worker's token), so another or the restarted
// worker takes it now rather than after the lock expires. Jobs of workers started by hand
// elsewhere fall back to BullMQ's stalled check (short, renewed locks).
import { hostname } from 'node:os';
import { Job, Queue } from 'bullmq';
import type { RedisClient } from '../util/redis.ts';
import { QUEUE, queuePrefix, runNamespace } from '../checkpoints/run-keys.ts';

/** BullMQ stalled-job check interval of every worker: a job whose lock expired (its worker gone, no supervisor to say so) is retried within about this much after the expiry. */
export const STALLED_CHECK_MS = 5_000;

export const workerKey = (prefix: string, runId: string, pid: number, host = hostname()) => `${runNamespace(prefix, runId)}:worker:${host}:${pid}`;

/** Record this process's BullMQ worker ids (called once its workers exist). */
export async function registerWorkers(redis: RedisClient, prefix: string, runId: string, workerIds: string[]): Promise<void> {
  if (workerIds.length) await redis.sadd(workerKey(prefix, runId, process.pid), ...workerIds);
}

/** The lock's worker id: the token without its `:<n>` counter. */
const ownerOf = (token: string) => token.slice(0, token.lastIndexOf(':'));

/** Move the active jobs of the dead process `pid` back to waiting; returns their ids. */
export async function reclaimJobs(redis: RedisClient, prefix: string, runId: string, pid: number): Promise<string[]> {
  const key = workerKey(prefix, runId, pid);
  const ids = new Set(await redis.smembers(key));
  const moved: string[] = [];
  if (!ids.size) return moved;
  for (const name of Object.values(QUEUE)) {
    const q = new Queue(name, { connection: redis, prefix: queuePrefix(prefix, runId) });
    try {
      for (const id of await redis.lrange(q.keys.active!, 0, -1)) {
        const token = await redis.get(`${q.toKey(id)}:lock`);
        if (!token || !ids.has(ownerOf(token))) continue;
        const job = await Job.fromId(q, id);
        // The script checks the token against the lock: a job finished or re-taken meanwhile is left alone.
        if (
          job &&
          (await job.moveToWait(token).then(
            () => true,
            () => false,
          ))
        )
          moved.push(`${name}/${id}`);
      }
    } finally {
      await q.close();
    }
  }
  await redis.del(key);
  return moved;
}
