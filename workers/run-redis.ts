// A run's keys in Redis are scratch: the run directory holds everything durable (adapters,
// trajectories, group files, user-state dumps, checkpoints), and `gsteer resume` rebuilds
// the queues and user states from it. So a run removes its keys when it ends, whatever the
// outcome, and `gsteer clean RUN_DIR` removes what a run that died left. Only the run's own
// keys (checkpoints/run-keys.ts runKeyPatterns: its run prefix), never another run's.
import { Queue } from 'bullmq';
import { QUEUE, queuePrefix, runKeyPatterns } from '../checkpoints/run-keys.ts';
import { deleteMatching, type RedisClient } from '../util/redis.ts';

/** Delete the run's keys; returns how many there were. */
export async function removeRunKeys(redis: RedisClient, prefix: string, runId: string): Promise<number> {
  return await deleteMatching(redis, runKeyPatterns(prefix, runId));
}

/** BullMQ workers connected to the run's queues (a live run, or workers started by hand). */
export async function liveWorkers(redis: RedisClient, prefix: string, runId: string): Promise<number> {
  let n = 0;
  for (const name of Object.values(QUEUE)) {
    const q = new Queue(name, { connection: redis, prefix: queuePrefix(prefix, runId), skipMetasUpdate: true });
    try {
      n += await q.getWorkersCount();
    } finally {
      await q.close();
    }
  }
  return n;
}
