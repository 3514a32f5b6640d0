// Who drives a run's queues. Before a run (train or resume) clears and refills its queues it
// claims them in Redis: `<run namespace>:owner` = {pid, host, startedAt, runDir}, set only
// when absent (SET NX) with a 30 s TTL that a heartbeat renews every 10 s. A claim held by
// a live process, or BullMQ workers connected to the queues (workers started by hand), make
// the launch refuse with the owner named instead of obliterating queues in use. A claim
// whose process is gone (this host, pid not running) or whose heartbeat stopped (TTL) is
// taken over. Run directories copied with their run id meet here: the run-dir lock
// (checkpoints/run-lock.ts) cannot see a copy.
import { hostname } from 'node:os';
import type { RedisClient } from '../util/redis.ts';
import { ownerKey } from '../checkpoints/run-keys.ts';
import { InputError } from '../util/errors.ts';
import { isRunning } from '../util/pid.ts';
import { liveWorkers } from './run-redis.ts';

export const OWNER_TTL_MS = 30_000;
const HEARTBEAT_MS = 10_000;

export interface QueueOwner {
  pid: number;
  host: string;
  startedAt: string;
  runDir: string;
}

export interface QueueClaim {
  release(): Promise<void>;
}

/** The live owner of the run's queues (null: none, or one whose process is gone). */
export async function liveOwner(redis: RedisClient, prefix: string, runId: string): Promise<QueueOwner | null> {
  const raw = await redis.get(ownerKey(prefix, runId));
  if (!raw) return null;
  let o: QueueOwner;
  try {
    o = JSON.parse(raw) as QueueOwner;
  } catch {
    return null;
  }
  return o.host === hostname() && !isRunning(o.pid) ? null : o;
}

export const describeQueueOwner = (o: QueueOwner) => `pid ${o.pid} on host ${o.host} (run directory ${o.runDir}, since ${o.startedAt})`;

/** Claim the run's queues for this process, or throw InputError naming who uses them. */
export async function claimQueues(redis: RedisClient, prefix: string, runId: string, runDir: string): Promise<QueueClaim> {
  const key = ownerKey(prefix, runId);
  const me = JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), runDir } satisfies QueueOwner);
  if ((await redis.set(key, me, 'PX', OWNER_TTL_MS, 'NX')) !== 'OK') {
    const owner = await liveOwner(redis, prefix, runId);
    if (owner)
      throw new InputError(
        `the Redis queues of run ${runId} are in use by ${describeQueueOwner(owner)}; stop that run first (its claim lapses ${OWNER_TTL_MS / 1000} s after its process is gone)`,
      );
    await redis.set(key, me, 'PX', OWNER_TTL_MS); // its owner is gone: take it over
  }
  const workers = await liveWorkers(redis, prefix, runId);
  if (workers > 0) {
    await redis.del(key);
    throw new InputError(
      `${workers} BullMQ worker(s) are connected to the queues of run ${runId} (started by hand elsewhere?); stop them before starting the run here`,
    );
  }
  // renew while the claim is ours, or again after it lapsed (a process suspended past the TTL)
  const renew = () =>
    void redis
      .eval(
        `local v = redis.call('GET', KEYS[1]) if v == ARGV[1] or v == false then return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end return 0`,
        1,
        key,
        me,
        OWNER_TTL_MS,
      )
      .catch(() => undefined);
  const timer = setInterval(renew, HEARTBEAT_MS);
  timer.unref();
  return {
    async release() {
      clearInterval(timer);
      await redis.eval(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 1, key, me).catch(() => undefined);
    },
  };
}
