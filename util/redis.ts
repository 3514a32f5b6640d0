// Redis connections: the options BullMQ workers need, credential-free URLs for messages,
// and deleting one prefix's keys (never anything outside it).
import { Redis, type RedisOptions } from 'ioredis';

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

/** Whether `s` holds a Redis Cluster hash tag: the first `{` with a non-empty `...}` after it. */
export function hasHashTag(s: string): boolean {
  const open = s.indexOf('{');
  const close = open < 0 ? -1 : s.indexOf('}', open + 1);
  return close > open + 1;
}

/**
 * The prefix of every Redis key of one run: the configured prefix plus the run id, so two
 * runs on one Redis never share a key, whatever their prefix. The run id goes in braces,
 * a Redis Cluster hash tag (`gsteer:{demo-1a2b3c4d}`): a run's queues, flows and user
 * states then sit on one slot, as BullMQ's multi-key scripts need, and different runs
 * spread over the cluster. A prefix that carries its own tag (`{gsteer}`) keeps it (only
 * the first tag counts): `{gsteer}:demo-1a2b3c4d`, every run on that one slot.
 */
export function runKeyPrefix(prefix: string, runId: string): string {
  return hasHashTag(prefix) ? `${prefix}:${runId}` : `${prefix}:{${runId}}`;
}

/** Redis URL without credentials, for messages and logs. */
export function showUrl(url: string): string {
  const u = new URL(url);
  u.password = '';
  u.username = '';
  return u.toString();
}

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

/** Delete every key matching one of the SCAN patterns (no KEYS, no FLUSH); returns how many. */
export async function deleteMatching(redis: Redis, patterns: string[]): Promise<number> {
  let n = 0;
  for (const pattern of patterns) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      // One DEL per key: keys of one pattern may sit in different Redis Cluster slots.
      for (const k of keys) n += await redis.del(k);
    } while (cursor !== '0');
  }
  return n;
}
