// Dataset validation (issue 2): every record rule (data/validate-record.ts) plus the
// cross-record rules — duplicate instance ids and duplicate userIds, also across files.
// Reports EVERY problem; nothing stops at the first.
import { readRecords, type ReadResult } from './read.ts';
import { validateInstanceRecord, validateUserStateRecord } from './validate-record.ts';
import type { Instance, UserState } from './schema.ts';
import type { Problem } from './problem.ts';
import { leakProblems, type Located } from './leaks.ts';

export type { Problem } from './problem.ts';
export { formatProblem } from './problem.ts';

export interface Validated {
  instances: Instance[];
  userStates: UserState[];
  problems: Problem[];
  /** Which files were read as which kind (for summaries). */
  kinds: { file: string; kind: ReadResult['kind']; records: number }[];
}

/** Validate already-read files; `instances`/`userStates` hold only the clean records. */
export function validateReads(reads: readonly ReadResult[]): Validated {
  const out: Validated = { instances: [], userStates: [], problems: [], kinds: [] };
  const firstInstance = new Map<string, string>(); // id -> "file:line"
  const firstUser = new Map<string, string>();
  const located = { instances: [] as Located<Instance>[], states: [] as Located<UserState>[] };
  for (const read of reads) {
    out.problems.push(...read.problems);
    out.kinds.push({ file: read.file, kind: read.kind, records: read.records.length });
    for (const rec of read.records) {
      const isState = read.kind === 'user_states';
      const v = isState ? validateUserStateRecord(rec) : validateInstanceRecord(rec);
      const problems = [...v.problems];
      if (v.id !== undefined) {
        const seen = isState ? firstUser : firstInstance;
        const first = seen.get(v.id);
        const field = isState ? 'userId' : 'id';
        const what = isState ? 'userId' : 'instance id';
        if (first)
          problems.unshift({
            file: rec.file,
            line: rec.line,
            instanceId: v.id,
            field,
            message: `duplicate ${what} "${v.id}" (first at ${first}); ${what}s must be unique across all files; rename or remove one`,
          });
        else seen.set(v.id, `${rec.file}:${rec.line}`);
      }
      out.problems.push(...problems);
      if (problems.length) continue;
      if ('instance' in v && v.instance) {
        out.instances.push(v.instance);
        located.instances.push({ value: v.instance, file: rec.file, line: rec.line });
      }
      if ('state' in v && v.state) {
        out.userStates.push(v.state);
        located.states.push({ value: v.state, file: rec.file, line: rec.line });
      }
    }
  }
  // Across files: no test annotation in training-side state (data/leaks.ts).
  out.problems.push(...leakProblems(located.instances, located.states));
  return out;
}

/** Read and validate instance and user-state files (kind detected per file, see read.ts). */
export function validateAll(files: readonly string[]): Validated {
  return validateReads(files.map(readRecords));
}

/** All problems in `files`; empty when the data is clean. */
export function validateFiles(files: readonly string[]): Problem[] {
  return validateAll(files).problems;
}
