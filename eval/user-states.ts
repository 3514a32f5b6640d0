// The user state during evaluation (method §6, §8; paper "Settings"): memories and profiles
// come from the final online states of GRPO on the training split (`gsteer eval --run RUN_DIR`:
// the run's last steps/step-N/user_states.jsonl; or a file given with --user-states; before any
// training, the states GRPO starts from, grpo.initialUserStates, empty by default) and stay
// FROZEN: the store refuses every write, so a test interaction can never change them. Users without a train instance start empty, even when the file
// has a state for them, so no test-only user information leaks in.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { trainCoverage } from '../data/splits.ts';
import { InputError } from '../util/errors.ts';
import type { Instance } from '../data/schema.ts';
import { loadUserStates } from '../data/load.ts';
import type { Encoder } from '../core/encoder.ts';
import { InMemoryUserStore } from '../rollout/user-store-memory.ts';
import { snapshotId } from '../rollout/user-store.ts';

export interface FrozenStates {
  store: FrozenUserStore;
  loaded: string[]; // users with a state (seen in training)
  dropped: string[]; // users in the file without a train instance (start empty)
}

/** An in-memory store that was loaded once and refuses every later write (evaluation never writes). */
export class FrozenUserStore extends InMemoryUserStore {
  private frozen = false;
  freeze(): void {
    this.frozen = true;
  }
  override async update(userId: string, change: Parameters<InMemoryUserStore['update']>[1]): Promise<number> {
    if (this.frozen) throw new Error(`internal: evaluation tried to write user ${userId}'s state; test interactions never update user states (method §8)`);
    return super.update(userId, change);
  }
}

/**
 * The last user_states.jsonl a GRPO run wrote (RUN_DIR/steps/step-N/user_states.jsonl, the
 * highest N): its final online states. InputError when the run wrote none.
 */
export function finalRunStates(runDir: string): { file: string; step: number } {
  const steps = join(runDir, 'steps');
  const found = existsSync(steps)
    ? readdirSync(steps)
        .map((d) => ({ d, step: /^step-(\d+)$/.exec(d)?.[1] }))
        .filter((x): x is { d: string; step: string } => x.step !== undefined && existsSync(join(steps, x.d, 'user_states.jsonl')))
        .map((x) => ({ file: join(steps, x.d, 'user_states.jsonl'), step: Number(x.step) }))
        .sort((a, b) => b.step - a.step)
    : [];
  if (!found[0])
    throw new InputError(
      `--run ${runDir}: no steps/step-N/user_states.jsonl in it; pass the directory of a GRPO run that finished at least one update (runs/<runName>)`,
    );
  return found[0];
}

export async function frozenUserStates(files: readonly string[], instances: readonly Instance[], encoder: Encoder): Promise<FrozenStates> {
  const store = new FrozenUserStore(encoder);
  const seen = trainCoverage(instances).users;
  const states = files.length ? loadUserStates(files) : [];
  const keep = states.filter((s) => seen.has(s.userId));
  await store.init(keep);
  store.freeze();
  return { store, loaded: keep.map((s) => s.userId), dropped: states.filter((s) => !seen.has(s.userId)).map((s) => s.userId) };
}

/** The frozen snapshot an episode reads: the user's only version (0 = empty). */
export async function frozenSnapshot(store: InMemoryUserStore, userId: string): Promise<string> {
  return snapshotId(userId, await store.latestVersion(userId));
}
