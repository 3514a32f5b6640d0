// Trimmed output vocabulary (method §14.2: the 151,936-row lm_head dominates small models).
//
// `vocab_map.json` in a model folder, when present, lists the real Qwen3 token ids the
// model keeps, sorted ascending: `{"format": "gsteer-vocab-map/1", "kept_ids": [...],
// "unk_id": N}` (a bare sorted array is accepted too; unk then defaults to <|endoftext|>
// when kept, else the first kept id). Row k of `model.embed_tokens.weight` and
// `lm_head.weight` belongs to token id kept_ids[k]; config.json `vocab_size` stays the full
// id space. Ids outside the map are read as `unk_id` (at input and as a scored target) and
// get -Infinity logits, so sampling never produces them. Without the file, row = token id.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../util/errors.ts';

export const VOCAB_MAP_FILE = 'vocab_map.json';
export const VOCAB_MAP_FORMAT = 'gsteer-vocab-map/1';
const ENDOFTEXT_ID = 151643;

export interface VocabMap {
  /** [rows] sorted token ids; row k <-> keptIds[k]. */
  keptIds: Int32Array;
  /** [vocabSize] token id -> row, or -1 when not kept. */
  rowOf: Int32Array;
  unkId: number;
}

export function buildVocabMap(keptIds: readonly number[], vocabSize: number, unkId: number | undefined, where: string): VocabMap {
  const rowOf = new Int32Array(vocabSize).fill(-1);
  keptIds.forEach((id, k) => {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
      throw new InputError(`${where}: kept_ids[${k}] = ${id} must be an integer token id in [0, ${vocabSize}) (config.json vocab_size)`);
    if (k > 0 && id <= (keptIds[k - 1] as number))
      throw new InputError(`${where}: kept_ids must be sorted ascending without repeats (kept_ids[${k - 1}] = ${keptIds[k - 1]}, kept_ids[${k}] = ${id})`);
    rowOf[id] = k;
  });
  if (!keptIds.length) throw new InputError(`${where}: kept_ids is empty`);
  const unk = unkId ?? ((rowOf[ENDOFTEXT_ID] ?? -1) >= 0 ? ENDOFTEXT_ID : (keptIds[0] as number));
  if ((rowOf[unk] ?? -1) < 0) throw new InputError(`${where}: unk_id ${unk} is not one of kept_ids; add it to kept_ids or pick a kept id`);
  return { keptIds: Int32Array.from(keptIds), rowOf, unkId: unk };
}

export function readVocabMap(dir: string, vocabSize: number): VocabMap | null {
  const file = join(dir, VOCAB_MAP_FILE);
  if (!existsSync(file)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  if (Array.isArray(raw)) return buildVocabMap(raw as number[], vocabSize, undefined, file);
  const o = raw as { kept_ids?: unknown; unk_id?: unknown };
  if (!o || !Array.isArray(o.kept_ids)) throw new InputError(`${file}: expected {"kept_ids": [sorted token ids], "unk_id": id} or a sorted array of token ids`);
  if (o.unk_id !== undefined && typeof o.unk_id !== 'number') throw new InputError(`${file}: unk_id ${JSON.stringify(o.unk_id)} must be a token id`);
  return buildVocabMap(o.kept_ids as number[], vocabSize, o.unk_id as number | undefined, file);
}

export function vocabMapJson(map: VocabMap): string {
  return `${JSON.stringify({ format: VOCAB_MAP_FORMAT, unk_id: map.unkId, kept_ids: Array.from(map.keptIds) })}\n`;
}

/** Token ids -> embedding rows (unknown ids -> unk's row); ids beyond vocab_size are refused. */
export function idsToRows(map: VocabMap | null, ids: readonly number[], vocabSize: number): Int32Array {
  const out = new Int32Array(ids.length);
  ids.forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
      throw new InputError(`token id ${id} at position ${i} is outside [0, ${vocabSize}) (the model's vocab_size)`);
    out[i] = map ? ((map.rowOf[id] as number) >= 0 ? (map.rowOf[id] as number) : (map.rowOf[map.unkId] as number)) : id;
  });
  return out;
}
