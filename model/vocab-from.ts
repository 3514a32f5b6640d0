// The kept token set for a trimmed-vocabulary model (`gsteer model init --vocab-from`):
// Qwen3's special tokens, the 256 byte-level base tokens, and every token the given text
// files produce. JSON / JSONL files contribute the tokens of each string value (as it
// will appear in prompts, with and without a leading space), other files their raw text.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { InputError } from '../util/errors.ts';
import type { Tokenizer } from '../core/tokenizer.ts';
import { baseKeptIds } from './init.ts';

function strings(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => strings(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => strings(v, out));
}

/** The texts of one file (strings of JSON values, or the whole text). */
export function fileTexts(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`--vocab-from ${file}: cannot read (${(e as Error).message})`);
  }
  const ext = extname(file).toLowerCase();
  if (ext !== '.jsonl' && ext !== '.json') return [text];
  const out: string[] = [];
  const lines = ext === '.json' ? [text] : text.split('\n');
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      strings(JSON.parse(line), out);
    } catch (e) {
      throw new InputError(`${file}:${ext === '.json' ? 1 : i + 1}: not valid JSON (${(e as Error).message})`);
    }
  });
  return out;
}

/** Files under a folder (recursively) with a text-like extension. */
export function textFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...textFilesUnder(p));
    else if (['.jsonl', '.json', '.txt', '.md', '.yaml'].includes(extname(name).toLowerCase())) out.push(p);
  }
  return out;
}

export function keptIdsFromFiles(tok: Tokenizer, files: readonly string[]): number[] {
  const ids = new Set(baseKeptIds());
  for (const file of files)
    for (const s of fileTexts(file)) {
      for (const id of tok.encode(s)) ids.add(id);
      for (const id of tok.encode(` ${s}`)) ids.add(id);
    }
  return [...ids].sort((a, b) => a - b);
}
