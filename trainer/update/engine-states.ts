// Where an adapter version's trainer state lives when the update goes through the Tinker
// contract (method §5.13). A version folder (adapters/policy-vN) always holds
// `engine-state.json`, the engine's path of the full state (adapter + optimizer, save_state).
// With gsteer's embedded engine the service's state folder is on this machine (the run's
// trainer-service/), so the version folder also holds the state's files themselves, the same
// PEFT adapter + optimizer.json as the in-process trainer writes: the policy server loads the
// adapter from there, checkpoints copy it, and a restarted service gets it back by import.
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../util/errors.ts';
import { CHECKPOINT_META, CheckpointStore } from '../service/checkpoints.ts';
import type { LoraSpec } from '../service/types.ts';

export const ENGINE_STATE_FILE = 'engine-state.json';

/** The environment variable holding the embedded service's API key: random per launch, passed to the service and the trainer worker (never written). */
export const EMBEDDED_KEY_ENV = 'GSTEER_TRAINER_SERVICE_KEY';

export interface EngineStateRecord {
  /** save_state's path (tinker://...): adapter + optimizer. */
  state: string;
  /** save_weights_for_sampler's path (a remote engine's sampler loads it); null when the sampler reads this folder. */
  sampler: string | null;
}

export function writeEngineState(dir: string, r: EngineStateRecord): void {
  writeFileSync(join(dir, ENGINE_STATE_FILE), `${JSON.stringify(r, null, 2)}\n`);
}

export function readEngineState(dir: string): EngineStateRecord | null {
  const f = join(dir, ENGINE_STATE_FILE);
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as EngineStateRecord) : null;
}

/** The embedded service's state folder, read and written from this process (the same machine). */
export class LocalStates {
  private readonly store: CheckpointStore;

  constructor(readonly stateDir: string) {
    this.store = new CheckpointStore(stateDir);
  }

  /** Copy a saved state's files (not the service's meta) into `dir`, then drop the service's copy. */
  export(path: string, dir: string): void {
    const { dir: src } = this.store.resolve(path, 'save_state path');
    for (const f of readdirSync(src)) if (f !== CHECKPOINT_META) copyFileSync(join(src, f), join(dir, f));
    rmSync(src, { recursive: true, force: true });
  }

  /**
   * A local folder (a version folder, or a PEFT adapter such as the SFT output) as a state the
   * service can load_state: tinker://import/weights/<name>, with the optimizer when it has one.
   */
  async import(dir: string, name: string, o: { baseModel: string; lora: LoraSpec }): Promise<{ path: string; optimizer: boolean }> {
    if (!existsSync(join(dir, 'adapter_model.safetensors')))
      throw new InputError(
        `${dir}: no adapter_model.safetensors; an adapter version or init adapter is a PEFT folder (adapter_config.json + adapter_model.safetensors)`,
      );
    const optimizer = existsSync(join(dir, 'optimizer.json'));
    const path = await this.store.write({ kind: 'weights', model_id: 'import', base_model: o.baseModel, lora: o.lora, optimizer }, name, true, async (tmp) => {
      for (const f of readdirSync(dir)) if (f.startsWith('adapter_') || f === 'optimizer.json') copyFileSync(join(dir, f), join(tmp, f));
    });
    return { path, optimizer };
  }

  /** Forget an imported state once it is loaded. */
  drop(path: string): void {
    rmSync(this.store.resolve(path, 'import path').dir, { recursive: true, force: true });
  }
}
