// The shared, persistent, versioned user state (method §2, §6): a profile and slot-level
// memories with embeddings. Two implementations share this interface and one conformance
// suite (tests/rollout/user-store-conformance.ts): Redis (user-store-redis.ts, real runs,
// many workers) and in-memory (user-store-memory.ts, single-process tools and tests).
//
// Versions: version 0 is the implicit empty state of every user (method §6: unseen users
// start empty). `init` writes version 1 from the initial states; every `update` writes
// latest+1 from the latest version. A GRPO group reads ONE snapshot (user, version) for all
// of its rollouts while updates write newer versions; older versions stay readable until
// `prune`d. Memories are immutable records shared between versions; a version lists the
// ids it contains.
import type { Memory, UserState } from '../data/schema.ts';

export interface StoredMemory extends Memory {
  id: string; // unique per user: `m{version}-{i}`
  addedIn: number; // version that added it (recency order)
  encoder: string; // Encoder.name that produced the embedding
  embedding: Float32Array; // unit vector of memoryText(m)
}

export interface UserSnapshot {
  userId: string;
  version: number;
  profile: string;
  memories: StoredMemory[]; // oldest first
}

/** What the online update (method §6) may change: new memories and one profile sentence. */
export interface UserStateChange {
  memories: Memory[];
  profileSentence?: string;
}

export interface MemoryHit {
  name: string;
  purpose: string;
  value: string;
  score: number; // encoder cosine to the query
}

export interface SearchResult {
  examined: number; // candidates scored (<= retrieveCandidates)
  hits: MemoryHit[]; // at most retrieveTopK, best first
}

export interface SearchOptions {
  candidates: number; // rollout.retrieveCandidates (15)
  topK: number; // rollout.retrieveTopK (3)
  /** rollout.retrievePreselect: how the candidates are chosen (retrieval.ts); default embedding (the paper's). */
  preselect?: 'embedding' | 'lexical';
}

export interface UserStore {
  /** Latest version of a user (0 when nothing was ever written). */
  latestVersion(userId: string): Promise<number>;
  /** The state at a version; throws InputError for a pruned or future version. */
  read(userId: string, version: number): Promise<UserSnapshot>;
  /** Writes version 1 of each user (error if a user already has versions). */
  init(states: readonly UserState[]): Promise<void>;
  /** Applies a change on top of the latest version; returns the new version number. */
  update(userId: string, change: UserStateChange): Promise<number>;
  /** Memory search inside one snapshot (rollout/retrieval.ts documents the two stages). */
  search(userId: string, version: number, query: string, opts: SearchOptions): Promise<SearchResult>;
  /** Forgets versions older than `keepFrom` (the latest is always kept). */
  prune(userId: string, keepFrom: number): Promise<void>;
  users(): Promise<string[]>;
  /** Every user with every kept version, JSON-safe (for checkpoints). */
  dump(): Promise<UserStoreDump>;
  /** Replaces the whole store with a dump. */
  restore(dump: UserStoreDump): Promise<void>;
  /** Deletes everything this store wrote. */
  clear(): Promise<void>;
}

export interface DumpedMemory extends Memory {
  id: string;
  addedIn: number;
  encoder: string;
  embedding: string; // base64 little-endian float32 (embedding-codec.ts)
}

export interface UserDump {
  userId: string;
  latest: number;
  versions: { version: number; profile: string; memoryIds: string[] }[];
  memories: DumpedMemory[];
}

export interface UserStoreDump {
  format: 'gsteer-user-store';
  v: 1;
  users: UserDump[];
}

/** Text a memory is embedded and judged by: name, purpose and value. */
export function memoryText(m: Pick<Memory, 'name' | 'purpose' | 'value'>): string {
  return `${m.name}: ${m.purpose}: ${m.value}`;
}

/** A group's snapshot id: `{userId}@{version}` (the user id may itself contain "@"). */
export function snapshotId(userId: string, version: number): string {
  return `${userId}@${version}`;
}

export function parseSnapshotId(id: string): { userId: string; version: number } {
  const at = id.lastIndexOf('@');
  const version = Number(id.slice(at + 1));
  if (at <= 0 || !Number.isInteger(version) || version < 0) throw new Error(`internal: snapshot id "${id}" is not "{userId}@{version}"`);
  return { userId: id.slice(0, at), version };
}
