// The versioning, update and search logic both user stores share (rollout/user-store.ts).
// A backend supplies a few storage primitives, the last of which is an atomic
// compare-and-set: write version `expected + 1` only if the latest is still `expected`.
//
// Update rule (method §6; the judge decides what is kept, this decides how it lands):
// - a kept slot with the same name and value as a memory of the latest version is skipped;
// - the same name with a new value replaces that memory in the new version (older
//   versions keep the old one), so a user's memory names stay unique per version;
// - the profile sentence is appended unless the profile already holds it;
// - a change that changes nothing writes no version (the latest is returned).
import type { Memory, UserState } from '../data/schema.ts';
import type { Encoder } from '../core/encoder.ts';
import { InputError } from '../util/errors.ts';
import { decodeEmbedding, encodeEmbedding } from './embedding-codec.ts';
import { searchSnapshot } from './retrieval.ts';
import {
  memoryText,
  type DumpedMemory,
  type SearchOptions,
  type SearchResult,
  type StoredMemory,
  type UserSnapshot,
  type UserStateChange,
  type UserStore,
  type UserStoreDump,
} from './user-store.ts';

export interface VersionRecord {
  profile: string;
  memoryIds: string[];
}

export abstract class VersionedUserStore implements UserStore {
  constructor(protected readonly encoder: Encoder) {}

  protected abstract getLatest(userId: string): Promise<number>;
  protected abstract getVersions(userId: string): Promise<Map<number, VersionRecord>>;
  protected abstract getVersion(userId: string, version: number): Promise<VersionRecord | null>;
  protected abstract getMemories(userId: string, ids: readonly string[]): Promise<StoredMemory[]>;
  /** Atomically: if latest == expected, store the memories and `version` (> expected), which becomes the latest. */
  protected abstract casWrite(userId: string, expected: number, version: number, rec: VersionRecord, added: StoredMemory[]): Promise<boolean>;
  protected abstract removeVersions(userId: string, versions: number[], memoryIds: string[]): Promise<void>;
  protected abstract deleteUser(userId: string): Promise<void>;
  abstract users(): Promise<string[]>;

  latestVersion(userId: string): Promise<number> {
    return this.getLatest(userId);
  }

  async read(userId: string, version: number): Promise<UserSnapshot> {
    if (version === 0) return { userId, version: 0, profile: '', memories: [] };
    const rec = await this.getVersion(userId, version);
    if (!rec) {
      const latest = await this.getLatest(userId);
      throw new InputError(
        `user "${userId}" has no state version ${version} (latest ${latest}); it was pruned or never written: read a snapshot id the controller handed out`,
      );
    }
    return { userId, version, profile: rec.profile, memories: await this.getMemories(userId, rec.memoryIds) };
  }

  async init(states: readonly UserState[]): Promise<void> {
    const seen = new Set<string>();
    for (const s of states) {
      if (seen.has(s.userId)) throw new InputError(`user state "${s.userId}" appears twice in the initial states; keep one record per user`);
      seen.add(s.userId);
    }
    for (const s of states) {
      const added = await this.embedNew(s.memories, 1);
      const ok = await this.casWrite(s.userId, 0, 1, { profile: s.profile.trim(), memoryIds: added.map((m) => m.id) }, added);
      if (!ok) throw new InputError(`user "${s.userId}" already has a stored state; initial states load into an empty run (clear it or use a new run id)`);
    }
  }

  async update(userId: string, change: UserStateChange): Promise<number> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const latest = await this.getLatest(userId);
      const cur = await this.read(userId, latest);
      const next = latest + 1;
      const plan = planChange(cur, change);
      if (!plan) return latest;
      const added = await this.embedNew(plan.added, next);
      const rec = { profile: plan.profile, memoryIds: [...plan.keptIds, ...added.map((m) => m.id)] };
      if (await this.casWrite(userId, latest, next, rec, added)) return next;
      // Another writer got there first: redo on top of its version.
    }
    throw new Error(`internal: user "${userId}" state update lost 20 races in a row`);
  }

  async search(userId: string, version: number, query: string, opts: SearchOptions): Promise<SearchResult> {
    const snap = await this.read(userId, version);
    if (snap.memories.length === 0) return { examined: 0, hits: [] };
    const [q] = await this.encoder.embed([query]);
    return searchSnapshot(snap.memories, query, q as Float32Array, this.encoder.name, opts);
  }

  async prune(userId: string, keepFrom: number): Promise<void> {
    const versions = await this.getVersions(userId);
    const latest = await this.getLatest(userId);
    const drop = [...versions.keys()].filter((v) => v < keepFrom && v !== latest);
    if (!drop.length) return;
    const live = new Set<string>();
    for (const [v, rec] of versions) if (!drop.includes(v)) rec.memoryIds.forEach((id) => live.add(id));
    const dead = new Set<string>();
    for (const v of drop) for (const id of (versions.get(v) as VersionRecord).memoryIds) if (!live.has(id)) dead.add(id);
    await this.removeVersions(userId, drop, [...dead]);
  }

  async dump(): Promise<UserStoreDump> {
    const users = [];
    for (const userId of (await this.users()).sort()) {
      const versions = await this.getVersions(userId);
      const ids = [...new Set([...versions.values()].flatMap((r) => r.memoryIds))];
      const memories = (await this.getMemories(userId, ids)).map(toDumped).sort((a, b) => a.addedIn - b.addedIn || a.id.localeCompare(b.id));
      users.push({
        userId,
        latest: await this.getLatest(userId),
        versions: [...versions].sort((a, b) => a[0] - b[0]).map(([version, r]) => ({ version, ...r })),
        memories,
      });
    }
    return { format: 'gsteer-user-store', v: 1, users };
  }

  async restore(dump: UserStoreDump): Promise<void> {
    if (dump?.format !== 'gsteer-user-store' || dump.v !== 1)
      throw new InputError('not a gsteer user-store dump (format "gsteer-user-store", v 1); pass the user_states dump of a checkpoint');
    await this.clear();
    for (const u of dump.users) {
      const mems = new Map(u.memories.map((m) => [m.id, fromDumped(m)]));
      // Replay the kept versions in order through the same atomic write (no bulk path needed);
      // each version writes the memories it lists that no earlier replayed version wrote.
      const written = new Set<string>();
      let prev = 0;
      for (const ver of u.versions) {
        const added = ver.memoryIds
          .filter((id) => !written.has(id))
          .map((id) => {
            const m = mems.get(id);
            if (!m)
              throw new InputError(
                `user-store dump: user "${u.userId}" version ${ver.version} lists memory "${id}" that the dump does not hold; the dump is damaged`,
              );
            written.add(id);
            return m;
          });
        await this.casWrite(u.userId, prev, ver.version, { profile: ver.profile, memoryIds: ver.memoryIds }, added);
        prev = ver.version;
      }
    }
  }

  async clear(): Promise<void> {
    for (const u of await this.users()) await this.deleteUser(u);
  }

  private async embedNew(mems: readonly Memory[], version: number): Promise<StoredMemory[]> {
    if (!mems.length) return [];
    const vecs = await this.encoder.embed(mems.map(memoryText));
    return mems.map((m, i) => ({ ...m, id: `m${version}-${i}`, addedIn: version, encoder: this.encoder.name, embedding: vecs[i] as Float32Array }));
  }
}

/** The pure part of an update: which memories stay, which are new, the new profile; null = no change. */
export function planChange(cur: UserSnapshot, change: UserStateChange): { profile: string; keptIds: string[]; added: Memory[] } | null {
  const byName = new Map<string, Memory>();
  for (const m of change.memories) byName.set(m.name, m); // later duplicates win
  const added = [...byName.values()].filter((m) => !cur.memories.some((c) => c.name === m.name && c.value === m.value));
  const replaced = new Set(added.map((m) => m.name));
  const keptIds = cur.memories.filter((c) => !replaced.has(c.name)).map((c) => c.id);
  const sentence = change.profileSentence?.trim() ?? '';
  const hasSentence = !sentence || cur.profile.toLowerCase().includes(sentence.toLowerCase());
  const profile = hasSentence ? cur.profile : [cur.profile, sentence].filter(Boolean).join(' ');
  if (!added.length && hasSentence) return null;
  return { profile, keptIds, added };
}

export function toDumped(m: StoredMemory): DumpedMemory {
  return { ...m, embedding: encodeEmbedding(m.embedding) };
}

export function fromDumped(m: DumpedMemory): StoredMemory {
  return { ...m, embedding: decodeEmbedding(m.embedding) };
}
