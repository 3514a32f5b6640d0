// Saved states as Tinker names them: tinker://<training run id>/weights/<name> (save_state:
// adapter + optimizer) and tinker://<training run id>/sampler_weights/<name>
// (save_weights_for_sampler: the PEFT adapter folder vLLM and `gsteer serve` load), the SDK's
// ParsedCheckpointTinkerPath layout. The training run id is the model id. Each maps to
// STATE_DIR/<run id>/<kind>/<name>/, written atomically (a temp folder renamed), with
// tinker_checkpoint.json describing it (base model, LoRA config, optimizer state or not), so
// weights_info and load_state work after the service restarts.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeDirAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import type { LoraSpec } from './types.ts';

export type CheckpointKind = 'weights' | 'sampler_weights';
export const CHECKPOINT_META = 'tinker_checkpoint.json';

export interface CheckpointMeta {
  tinker_path: string;
  kind: CheckpointKind;
  model_id: string;
  base_model: string;
  lora: LoraSpec;
  optimizer: boolean;
  created: string;
}

/** Names are one path segment: letters, digits, . _ - : (no "/" and no "..": they become folder names). */
const NAME = /^[A-Za-z0-9_][A-Za-z0-9._:-]{0,199}$/;

export function checkName(name: string, field: string): void {
  if (!NAME.test(name) || name.includes('..'))
    throw new InputError(
      `${field} = ${JSON.stringify(name)}: a checkpoint name is 1-200 letters, digits, ".", "_", "-" or ":" (no "/" or ".."), e.g. "step-0010"`,
    );
}

export const tinkerPath = (runId: string, kind: CheckpointKind, name: string): string => `tinker://${runId}/${kind}/${name}`;

export function parseTinkerPath(path: string, field: string): { runId: string; kind: CheckpointKind; name: string } {
  const parts = path.startsWith('tinker://') ? path.slice('tinker://'.length).split('/') : [];
  const [runId, kind, name] = parts as [string, string, string];
  if (parts.length !== 3 || (kind !== 'weights' && kind !== 'sampler_weights'))
    throw new InputError(
      `${field} = ${JSON.stringify(path)}: a Tinker path looks like tinker://<model id>/weights/<name> or tinker://<model id>/sampler_weights/<name>`,
    );
  checkName(runId, `${field} (model id)`);
  checkName(name, `${field} (name)`);
  return { runId, kind, name };
}

export class CheckpointStore {
  constructor(readonly root: string) {}

  dirOf(runId: string, kind: CheckpointKind, name: string): string {
    return join(this.root, runId, kind, name);
  }

  /** Write a checkpoint: `fill(tmpDir)` writes the engine's files, then the meta file goes beside them. */
  async write(meta: Omit<CheckpointMeta, 'tinker_path' | 'created'>, name: string, overwrite: boolean, fill: (dir: string) => Promise<void>): Promise<string> {
    const path = tinkerPath(meta.model_id, meta.kind, name);
    const dir = this.dirOf(meta.model_id, meta.kind, name);
    if (existsSync(dir) && !overwrite) throw new InputError(`checkpoint ${path} already exists; save under another name or pass overwrite=true`);
    await writeDirAtomic(dir, async (tmp) => {
      await fill(tmp);
      const full: CheckpointMeta = { ...meta, tinker_path: path, created: new Date().toISOString() };
      writeFileSync(join(tmp, CHECKPOINT_META), JSON.stringify(full, null, 2));
    });
    return path;
  }

  /** The folder and meta of a saved path; a user error naming the path when there is none. */
  resolve(path: string, field: string): { dir: string; meta: CheckpointMeta } {
    const { runId, kind, name } = parseTinkerPath(path, field);
    const dir = this.dirOf(runId, kind, name);
    const metaFile = join(dir, CHECKPOINT_META);
    if (!existsSync(metaFile))
      throw new InputError(`${field} = ${path}: no such checkpoint on this server (under ${this.root}); save_state or save_weights_for_sampler writes one`);
    return { dir, meta: JSON.parse(readFileSync(metaFile, 'utf8')) as CheckpointMeta };
  }
}
