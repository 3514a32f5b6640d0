// JSONL reading with line numbers, so every error can name file and line.
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from './atomic.ts';
import { InputError } from './errors.ts';

export interface JsonlRecord {
  file: string;
  line: number; // 1-based
  value: unknown;
}

/** U+FEFF at the start of a file: some editors save UTF-8 with it; JSON (RFC 8259 §8.1) does not allow it. */
export const BOM = '\uFEFF';
export const BOM_PROBLEM =
  "the file starts with a byte order mark (BOM, U+FEFF), which JSON does not allow; save it as UTF-8 without BOM (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)";

export function readJsonl(file: string): JsonlRecord[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`${file}: cannot read (${(e as Error).message}); check the path`);
  }
  const out: JsonlRecord[] = [];
  const problems: string[] = [];
  if (text.startsWith(BOM)) {
    problems.push(`${file}:1: ${BOM_PROBLEM}`);
    text = text.slice(1);
  }
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    try {
      out.push({ file, line: i + 1, value: JSON.parse(line) });
    } catch (e) {
      problems.push(`${file}:${i + 1}: not valid JSON (${(e as Error).message}); each line must be one JSON object`);
    }
  });
  if (problems.length) throw new InputError(problems.join('\n'), problems);
  return out;
}

export function writeJsonlLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

export function countLines(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim()).length;
}

/** Keep the lines `keep` accepts, in order (a line that is not JSON is dropped: a torn write). */
export function filterLines(file: string, keep: (record: unknown) => boolean): void {
  if (!existsSync(file)) return;
  const kept = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => {
      if (!l.trim()) return false;
      try {
        return keep(JSON.parse(l) as unknown);
      } catch {
        return false;
      }
    });
  writeFileAtomic(file, kept.map((l) => `${l}\n`).join(''));
}

/** Keep the first n lines (resume: drop the records of updates after the checkpoint). */
export function truncateLines(file: string, n: number): void {
  if (!existsSync(file)) return;
  const kept = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .slice(0, n);
  writeFileAtomic(file, kept.map((l) => `${l}\n`).join(''));
}
