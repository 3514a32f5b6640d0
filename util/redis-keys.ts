// Redis names without a connection: a cluster URL, a key's hash tag (Redis Cluster's slot
// rule) and a literal as a SCAN glob. Pure, so the config schema checks them without ioredis.

/** True for a `queues.redisUrl` that names a Redis Cluster node (`redis://host:port?cluster=true`). */
export function isClusterUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const v = new URL(url).searchParams.get('cluster');
  return v === 'true' || v === '1';
}

/**
 * The hash tag of a key (Redis Cluster's rule: the text between the first `{` and the
 * first `}` after it, when not empty), or null: keys with the same tag share one slot.
 */
export function hashTag(key: string): string | null {
  const i = key.indexOf('{');
  const j = i < 0 ? -1 : key.indexOf('}', i + 1);
  return j > i + 1 ? key.slice(i + 1, j) : null;
}

/** A literal string as a Redis glob (SCAN MATCH): `* ? [ ] \` escaped. */
export const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
