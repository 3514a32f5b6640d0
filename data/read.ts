// Tolerant JSONL reading for validation: unlike util/jsonl.ts (which throws on the first
// bad file), every unreadable file and every bad line becomes a Problem, so one run of
// `gsteer data validate` lists everything at once.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { BOM, BOM_PROBLEM, type JsonlRecord } from '../util/jsonl.ts';
import { buildSetProblem } from './build/output-set.ts';
import type { Problem } from './problem.ts';

export type FileKind = 'instances' | 'user_states';

export interface ReadResult {
  file: string;
  kind: FileKind;
  records: JsonlRecord[];
  problems: Problem[];
}

export function readRecords(file: string): ReadResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const why = (e as Error).message;
    return {
      file,
      kind: kindByName(file) ?? 'instances',
      records: [],
      problems: [{ file, line: 0, field: '(file)', message: `cannot read (${why}); check the path` }],
    };
  }
  const records: JsonlRecord[] = [];
  const problems: Problem[] = [];
  const set = buildSetProblem(file); // a data build's output read as part of its set
  if (set) problems.push({ file, line: 0, field: '(file)', message: set });
  if (text.startsWith(BOM)) {
    problems.push({ file, line: 1, field: '(file)', message: BOM_PROBLEM });
    text = text.slice(1);
  }
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    try {
      records.push({ file, line: i + 1, value: JSON.parse(raw) });
    } catch (e) {
      problems.push({ file, line: i + 1, field: '(record)', message: `not valid JSON (${(e as Error).message}); each line must be one JSON object` });
    }
  });
  return { file, kind: fileKind(file, records), records, problems };
}

/**
 * User-state files are recognized by name (`user_states*.jsonl`) or by content: every
 * record is an object with `userId` and without `taskId`. Anything else is instances.
 */
export function fileKind(file: string, records: readonly JsonlRecord[]): FileKind {
  const byName = kindByName(file);
  if (byName) return byName;
  const isState = (v: unknown) => typeof v === 'object' && v !== null && 'userId' in v && !('taskId' in v);
  return records.length > 0 && records.every((r) => isState(r.value)) ? 'user_states' : 'instances';
}

function kindByName(file: string): FileKind | null {
  return /^user_states.*\.jsonl$/.test(basename(file)) ? 'user_states' : null;
}
