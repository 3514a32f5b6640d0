// Loading datasets for training and evaluation: validate everything first and refuse the
// whole dataset with every problem listed (InputError, never retried), so a run never
// starts on half-valid data.
import { InputError } from '../util/errors.ts';
import type { Instance, UserState } from './schema.ts';
import { formatProblem, validateAll, type Validated } from './validate.ts';

function loadClean(files: readonly string[], want: 'instances' | 'user_states'): Validated {
  if (files.length === 0) throw new InputError(`no ${want} files given; pass at least one JSONL file`);
  const v = validateAll(files);
  const wrong = v.kinds.filter((k) => k.kind !== want && k.records > 0);
  const problems = [
    ...v.problems.map(formatProblem),
    ...wrong.map((k) => `${k.file}:0: (file): looks like a ${k.kind} file, expected ${want}; pass it to the other option`),
  ];
  if (problems.length) {
    throw new InputError(`${problems.length} problem(s) in ${files.join(', ')}:\n${problems.join('\n')}`, problems);
  }
  return v;
}

/** Validated instances from JSONL files, in file order. Throws InputError listing every problem. */
export function loadInstances(files: readonly string[]): Instance[] {
  return loadClean(files, 'instances').instances;
}

/** Validated initial user states (method §2, §6). Throws InputError listing every problem. */
export function loadUserStates(files: readonly string[]): UserState[] {
  return loadClean(files, 'user_states').userStates;
}
