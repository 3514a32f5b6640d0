// Queue names, Redis connections and job ids (ARCHITECTURE.md "One GRPO update").
// BullMQ custom job ids must not contain ':'; ours are built from (run, epoch, step,
// group, trajectory), so a retried or re-submitted job never duplicates work.
import { Redis, type RedisOptions } from 'ioredis';

export const QUEUE = { rollouts: 'rollouts', groups: 'groups', updates: 'updates' } as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

/** ioredis options BullMQ workers need: never give up a command while Redis restarts. */
export function redisOptions(url: string): RedisOptions {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    maxRetriesPerRequest: null,
    // Reconnect quickly, forever; the controller decides when a run must stop.
    retryStrategy: (times: number) => Math.min(100 * times, 2000),
  };
}

export function connect(url: string): Redis {
  return new Redis(redisOptions(url));
}

/** Redis URL without credentials, for messages and logs. */
export function showUrl(url: string): string {
  const u = new URL(url);
  u.password = '';
  u.username = '';
  return u.toString();
}

const pad = (n: number, w = 6) => String(n).padStart(w, '0');

export const jobId = {
  update: (runId: string, epoch: number, step: number) => `${runId}-e${epoch}-s${pad(step)}`,
  group: (runId: string, epoch: number, step: number, g: number) => `${runId}-e${epoch}-s${pad(step)}-g${g}`,
  rollout: (runId: string, epoch: number, step: number, g: number, i: number) =>
    `${runId}-e${epoch}-s${pad(step)}-g${g}-t${i}`,
};

/** Group id inside a run: stable across epochs, so file paths are deterministic. */
export const groupIdOf = (step: number, g: number) => `s${pad(step)}-g${g}`;

/** Redis key of the metrics stream (same prefix as the queues, so a hash tag keeps it on one slot). */
export const metricsStreamKey = (prefix: string, runId: string) => `${prefix}:metrics:${runId}`;

/** Delete every key under `prefix:` (SCAN, so a large keyspace is never blocked); nothing else is touched. */
export async function deletePrefixedKeys(prefix: string, url = 'redis://127.0.0.1:6379'): Promise<void> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}
