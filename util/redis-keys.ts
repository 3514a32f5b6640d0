// Redis names without a connection: a cluster URL, a key's hash tag (Redis Cluster's slot
// rule: keys with the same tag share a slot), the prefix of every key of a run, and a literal
// as a SCAN glob. Pure, so the config schema and the key names use them without ioredis.

/** True for a `queues.redisUrl` that names a Redis Cluster node (`redis://host:port?cluster=true`). */
export function isClusterUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const v = new URL(url).searchParams.get('cluster');
  return v === 'true' || v === '1';
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

/** A literal string as a Redis glob (SCAN MATCH): `* ? [ ] \` escaped. */
export const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
