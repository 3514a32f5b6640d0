// What made a model folder, as its training records say: pretrain.json (the warm-up
// stages, trainer/model/pretrain.ts), average.json (the sources of a mean, average.ts) and
// expand.json (the source of a block expansion, expand.ts). A model made from others
// carries theirs inside its own record, so the whole history of a base can be read back.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const PRETRAIN_RECORD = 'pretrain.json';
export const AVERAGE_RECORD = 'average.json';
export const EXPAND_RECORD = 'expand.json';

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
