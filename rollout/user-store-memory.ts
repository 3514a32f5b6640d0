// In-memory UserStore: the same versioning and search as the Redis store, in one process
// (single-process tools, eval with a frozen state, tests). Records are copied in and out so
// callers can never mutate a stored version.
import type { Encoder } from '../core/encoder.ts';
import { VersionedUserStore, type VersionRecord } from './user-store-base.ts';
import type { StoredMemory } from './user-store.ts';

interface UserRecords {
  latest: number;
  versions: Map<number, VersionRecord>;
  memories: Map<string, StoredMemory>;
}

const copyMem = (m: StoredMemory): StoredMemory => ({ ...m, embedding: Float32Array.from(m.embedding) });
const copyRec = (r: VersionRecord): VersionRecord => ({ profile: r.profile, memoryIds: [...r.memoryIds] });

export class InMemoryUserStore extends VersionedUserStore {
  private readonly data = new Map<string, UserRecords>();

  constructor(encoder: Encoder) {
    super(encoder);
  }

  protected async getLatest(userId: string): Promise<number> {
    return this.data.get(userId)?.latest ?? 0;
  }

  protected async getVersions(userId: string): Promise<Map<number, VersionRecord>> {
    const u = this.data.get(userId);
    return new Map([...(u?.versions ?? [])].map(([v, r]) => [v, copyRec(r)]));
  }

  protected async getVersion(userId: string, version: number): Promise<VersionRecord | null> {
    const r = this.data.get(userId)?.versions.get(version);
    return r ? copyRec(r) : null;
  }

  protected async getMemories(userId: string, ids: readonly string[]): Promise<StoredMemory[]> {
    const u = this.data.get(userId);
    return ids.map((id) => {
      const m = u?.memories.get(id);
      if (!m) throw new Error(`internal: user "${userId}" memory "${id}" is listed by a version but missing`);
      return copyMem(m);
    });
  }

  protected async casWrite(userId: string, expected: number, version: number, rec: VersionRecord, added: StoredMemory[]): Promise<boolean> {
    let u = this.data.get(userId);
    if ((u?.latest ?? 0) !== expected) return false;
    if (!u) this.data.set(userId, (u = { latest: 0, versions: new Map(), memories: new Map() }));
    for (const m of added) u.memories.set(m.id, copyMem(m));
    u.versions.set(version, copyRec(rec));
    u.latest = version;
    return true;
  }

  protected async removeVersions(userId: string, versions: number[], memoryIds: string[]): Promise<void> {
    const u = this.data.get(userId);
    if (!u) return;
    for (const v of versions) u.versions.delete(v);
    for (const id of memoryIds) u.memories.delete(id);
  }

  protected async deleteUser(userId: string): Promise<void> {
    this.data.delete(userId);
  }

  async users(): Promise<string[]> {
    return [...this.data.keys()];
  }
}
