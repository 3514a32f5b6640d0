// The user state during evaluation (method §6, §8; paper "Settings"): memories and profiles
// come from the final online states of GRPO on the training split (a checkpoint's
// user_states.jsonl, or data.userStates before any training) and stay FROZEN: nothing
// here ever calls update. Users without a train instance start empty, even when the file
// has a state for them, so no test-only user information leaks in.
import { trainCoverage } from '../data/splits.ts';
import type { Instance } from '../data/schema.ts';
import { loadUserStates } from '../data/load.ts';
import type { Encoder } from '../core/encoder.ts';
import { InMemoryUserStore } from '../rollout/user-store-memory.ts';
import { snapshotId } from '../rollout/user-store.ts';

export interface FrozenStates {
  store: InMemoryUserStore;
  loaded: string[]; // users with a state (seen in training)
  dropped: string[]; // users in the file without a train instance (start empty)
}

export async function frozenUserStates(files: readonly string[], instances: readonly Instance[], encoder: Encoder): Promise<FrozenStates> {
  const store = new InMemoryUserStore(encoder);
  const seen = trainCoverage(instances).users;
  const states = files.length ? loadUserStates(files) : [];
  const keep = states.filter((s) => seen.has(s.userId));
  await store.init(keep);
  return { store, loaded: keep.map((s) => s.userId), dropped: states.filter((s) => !seen.has(s.userId)).map((s) => s.userId) };
}

/** The frozen snapshot an episode reads: the user's only version (0 = empty). */
export async function frozenSnapshot(store: InMemoryUserStore, userId: string): Promise<string> {
  return snapshotId(userId, await store.latestVersion(userId));
}
