// Loading a QREF dataset for training and evaluation: validate all files first and refuse
// the whole set with every problem listed (InputError, never retried), so a run never
// starts on half-valid data (the same contract as data/load.ts for G-STEER).
import { InputError } from '../../util/errors.ts';
import { formatProblem, type Problem } from '../problem.ts';
import type { CorpusDoc, Demonstration, Question, TurnCaps } from './schema.ts';
import { validateCorpus, validateDemonstrations, validateQuestions } from './validate.ts';

export interface QrefFiles {
  corpus: string;
  questions: string;
  /** SFT demonstrations (optional: PPO needs only the corpus and the questions). */
  demonstrations?: string;
}

export interface QrefData {
  corpus: CorpusDoc[];
  questions: Question[];
  demonstrations: Demonstration[];
}

export function loadQref(files: QrefFiles, caps: TurnCaps): QrefData {
  const c = validateCorpus(files.corpus);
  const q = validateQuestions(files.questions, new Set(c.docs.map((d) => d.id)));
  const d = files.demonstrations ? validateDemonstrations(files.demonstrations, caps, q.questions) : { demonstrations: [], problems: [] };
  const problems: Problem[] = [...c.problems, ...q.problems, ...d.problems];
  const empty = [
    ...(c.docs.length === 0 && c.problems.length === 0 ? [`${files.corpus}:0: (file): no documents; the corpus needs at least one line`] : []),
    ...(q.questions.length === 0 && q.problems.length === 0 ? [`${files.questions}:0: (file): no questions; add at least one line`] : []),
  ];
  const lines = [...problems.map(formatProblem), ...empty];
  if (lines.length) throw new InputError(`${lines.length} problem(s) in the QREF data:\n${lines.join('\n')}`, lines);
  return { corpus: c.docs, questions: q.questions, demonstrations: d.demonstrations };
}
