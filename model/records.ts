// What made a model folder, as its training records say: pretrain.json (the warm-up
// stages, trainer/pretrain/pretrain.ts), average.json (the sources of a mean, average.ts) and
// expand.json (the source of a block expansion, expand.ts). A model made from others
// carries theirs inside its own record, so the whole history of a base can be read back.
// Also the two steps every command that writes a model from others shares: refuse a
// non-empty output folder, and copy the source's other files (config, vocabulary map).
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { copyFileSynced } from '../util/atomic.ts';
import { join } from 'node:path';
import { InputError } from '../util/errors.ts';

export const PRETRAIN_RECORD = 'pretrain.json';
export const AVERAGE_RECORD = 'average.json';
export const EXPAND_RECORD = 'expand.json';
export const WEIGHTS_FILE = 'model.safetensors';
/** Files that describe one model alone (its weights, card and records): never copied to a model made from it. */
const OWN_FILES = [WEIGHTS_FILE, 'README.md', PRETRAIN_RECORD, AVERAGE_RECORD, EXPAND_RECORD];

export interface ModelRecords {
  pretrain?: unknown;
  average?: unknown;
  expand?: unknown;
}

/** The records in `dir` (only those present). */
export function modelRecords(dir: string): ModelRecords {
  const read = (f: string): unknown => JSON.parse(readFileSync(join(dir, f), 'utf8'));
  const out: ModelRecords = {};
  if (existsSync(join(dir, PRETRAIN_RECORD))) out.pretrain = read(PRETRAIN_RECORD);
  if (existsSync(join(dir, AVERAGE_RECORD))) out.average = read(AVERAGE_RECORD);
  if (existsSync(join(dir, EXPAND_RECORD))) out.expand = read(EXPAND_RECORD);
  return out;
}

/** `out` must be new or empty: a command that writes a model never mixes it with another. */
export function refuseNonEmptyOut(command: string, out: string): void {
  if (existsSync(out) && readdirSync(out).length)
    throw new InputError(`${command}: --out ${out} exists and is not empty; write the model to a new folder (the sources stay as they are)`);
}

/** Create `out` with every plain file of `src` but its own ones (OWN_FILES) and `also`. */
export function copyModelFiles(src: string, out: string, also: readonly string[] = []): void {
  mkdirSync(out, { recursive: true });
  const skip = new Set([...OWN_FILES, ...also]);
  for (const f of readdirSync(src)) if (!skip.has(f) && statSync(join(src, f)).isFile()) copyFileSynced(join(src, f), join(out, f));
}
