// UserStore on Redis (method §2/§6), shared by every rollout and group worker of a run.
// Keys, with R = the run's key prefix (util/redis.ts runKeyPrefix: `{prefix}:{<runId>}`, a
// hash tag, so every key of the run sits in one Redis Cluster slot) and
// K = `R:run:user:{<userId>}` (the user id URI-encoded; its braces are a second tag, which
// Redis ignores after the first):
//   K:latest    string  latest version number
//   K:versions  hash    version -> JSON {profile, memoryIds}
//   K:memories  hash    memory id -> JSON {name, purpose, value, sourceInstance?, addedIn, encoder, embedding (base64 f32 LE)}
//   R:run:users   set of user ids (for dump/clear)
// A write is one Lua script (compare-and-set on K:latest), so concurrent group workers
// never lose an update and a reader never sees a half-written version.
import type { RedisClient } from '../util/redis.ts';
import type { Encoder } from '../core/encoder.ts';
import { runKeyPrefix } from '../util/redis.ts';
import { fromDumped, toDumped, VersionedUserStore, type VersionRecord } from './user-store-base.ts';
import type { DumpedMemory, StoredMemory } from './user-store.ts';

// KEYS: latest, versions, memories. ARGV: expected, version, record JSON, then id/JSON pairs.
const CAS_WRITE = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur ~= tonumber(ARGV[1]) then return 0 end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('SET', KEYS[1], ARGV[2])
return 1`;

export interface RedisUserStoreOptions {
  prefix: string; // queues.prefix of the run config
  runId: string;
}

export class RedisUserStore extends VersionedUserStore {
  private readonly base: string;

  constructor(
    private readonly redis: RedisClient,
    encoder: Encoder,
    opts: RedisUserStoreOptions,
  ) {
    super(encoder);
    this.base = `${runKeyPrefix(opts.prefix, opts.runId)}:run`;
  }

  /** K for one user (exported for tests and tools that inspect keys). */
  userKey(userId: string): string {
    return `${this.base}:user:{${encodeURIComponent(userId)}}`;
  }

  private get usersKey(): string {
    return `${this.base}:users`;
  }

  protected async getLatest(userId: string): Promise<number> {
    return Number((await this.redis.get(`${this.userKey(userId)}:latest`)) ?? 0);
  }

  protected async getVersions(userId: string): Promise<Map<number, VersionRecord>> {
    const all = await this.redis.hgetall(`${this.userKey(userId)}:versions`);
    return new Map(Object.entries(all).map(([v, json]) => [Number(v), JSON.parse(json) as VersionRecord]));
  }

  protected async getVersion(userId: string, version: number): Promise<VersionRecord | null> {
    const json = await this.redis.hget(`${this.userKey(userId)}:versions`, String(version));
    return json ? (JSON.parse(json) as VersionRecord) : null;
  }

  protected async getMemories(userId: string, ids: readonly string[]): Promise<StoredMemory[]> {
    if (!ids.length) return [];
    const rows = await this.redis.hmget(`${this.userKey(userId)}:memories`, ...ids);
    return rows.map((json, i) => {
      if (!json) throw new Error(`internal: user "${userId}" memory "${ids[i]}" is listed by a version but missing in Redis`);
      return fromDumped(JSON.parse(json) as DumpedMemory);
    });
  }

  protected async casWrite(userId: string, expected: number, version: number, rec: VersionRecord, added: StoredMemory[]): Promise<boolean> {
    const k = this.userKey(userId);
    const pairs = added.flatMap((m) => [m.id, JSON.stringify(toDumped(m))]);
    const ok = await this.redis.eval(
      CAS_WRITE,
      3,
      `${k}:latest`,
      `${k}:versions`,
      `${k}:memories`,
      String(expected),
      String(version),
      JSON.stringify(rec),
      ...pairs,
    );
    if (Number(ok) !== 1) return false;
    await this.redis.sadd(this.usersKey, userId); // other slot: outside the script on purpose
    return true;
  }

  protected async removeVersions(userId: string, versions: number[], memoryIds: string[]): Promise<void> {
    const k = this.userKey(userId);
    const m = this.redis.multi();
    if (versions.length) m.hdel(`${k}:versions`, ...versions.map(String));
    if (memoryIds.length) m.hdel(`${k}:memories`, ...memoryIds);
    await m.exec();
  }

  protected async deleteUser(userId: string): Promise<void> {
    const k = this.userKey(userId);
    await this.redis.del(`${k}:latest`, `${k}:versions`, `${k}:memories`);
    await this.redis.srem(this.usersKey, userId);
  }

  async users(): Promise<string[]> {
    return this.redis.smembers(this.usersKey);
  }
}
