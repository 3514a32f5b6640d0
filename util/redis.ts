// Redis connections: the options BullMQ workers need, credential-free URLs for messages,
// and deleting one prefix's keys (never anything outside it). A URL with `?cluster=true`
// names one node of a Redis Cluster: connect() then returns an ioredis Cluster, which
// finds the other nodes itself. BullMQ needs every key of a flow in one slot; every key of
// a run starts with runKeyPrefix (util/redis-keys.ts), which carries a hash tag.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { globEscape, isClusterUrl } from './redis-keys.ts';

export { globEscape, hasHashTag, isClusterUrl, runKeyPrefix } from './redis-keys.ts';

/** A single Redis or a Redis Cluster: the same commands (ioredis routes each by its key's slot). */
export type RedisClient = Redis | Cluster;

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

/** A connection to the URL's Redis (or Cluster); `over` changes the per-node options (e.g. a dashboard's fail-fast retries). */
export function connect(url: string, over: Partial<RedisOptions> = {}): RedisClient {
  const o = { ...redisOptions(url), ...over };
  if (!isClusterUrl(url)) return new Redis(o);
  const { host, port, retryStrategy, ...node } = o;
  // Node options apply to every node the cluster reports; reconnects follow the same rule.
  return new Cluster([{ host, port }], { redisOptions: node, ...(retryStrategy ? { clusterRetryStrategy: retryStrategy } : {}) });
}

/** Redis URL without credentials, for messages and logs. */
export function showUrl(url: string): string {
  const u = new URL(url);
  u.password = '';
  u.username = '';
  return u.toString();
}

/** The connections a SCAN must visit: each master of a Cluster (a SCAN sees one node's keys), or the one Redis. */
async function scanTargets(redis: RedisClient): Promise<Redis[]> {
  if (!(redis instanceof Cluster)) return [redis];
  // A fresh Cluster client knows its nodes only once it has read the slot map.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  return redis.nodes('master');
}

/** Delete every key under `prefix:` (SCAN, so a large keyspace is never blocked); nothing else is touched. */
export async function deletePrefixedKeys(prefix: string, url = 'redis://127.0.0.1:6379'): Promise<void> {
  const r = connect(url, { maxRetriesPerRequest: 1 });
  try {
    await deleteMatching(r, [`${globEscape(prefix)}:*`]);
  } finally {
    r.disconnect();
  }
}

/** Delete every key matching one of the SCAN patterns (no KEYS, no FLUSH), on every master; returns how many. */
export async function deleteMatching(redis: RedisClient, patterns: string[]): Promise<number> {
  let n = 0;
  for (const node of await scanTargets(redis))
    for (const pattern of patterns) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        // One DEL per key, sent together: keys of one pattern may sit in different Cluster slots.
        for (const d of await Promise.all(keys.map((k) => redis.del(k)))) n += d;
      } while (cursor !== '0');
    }
  return n;
}
