// Validation of QREF files (data/qref/schema.ts): every problem of every line at once, each
// as `file:line: [id] field: message` where the message names the value found, the rule and
// the fix. Record rules come from the zod schemas; the rules across records
// are checked here: unique ids, evidence ids that name corpus documents, refined batches
// within the refiner's turn caps, and demonstrations whose inputs match their question.
import type { z } from 'zod';
import { readRecords } from '../read.ts';
import { pathText, show, type Problem } from '../problem.ts';
import { CorpusDocSchema, DemonstrationSchema, QuestionSchema, type CorpusDoc, type Demonstration, type Question, type TurnCaps } from './schema.ts';

const FORMAT = 'data/qref/README.md';

/** Problems in file order (a stable sort keeps a line's own problems in the order found). */
const byLine = (ps: Problem[]) => [...ps].sort((a, b) => a.line - b.line);

interface Parsed<T> {
  records: { line: number; value: T }[];
  problems: Problem[];
}

/** zod issues of one record -> Problems (one per unknown key, one per bad field). */
function zodProblems(error: z.ZodError, raw: unknown, file: string, line: number, id: string | undefined, keys: string[]): Problem[] {
  return error.issues.flatMap((issue): Problem[] => {
    const at = { file, line, ...(id !== undefined ? { instanceId: id } : {}) };
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        ...at,
        field: pathText([...issue.path, key]),
        message: `unknown field "${key}" (rule: only ${keys.join(', ')}); fix: remove it or correct the spelling`,
      }));
    }
    let value: unknown = raw;
    for (const k of issue.path) value = typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[k] : undefined;
    const message =
      value === undefined
        ? `missing (rule: ${issue.message}); fix: add the field, see ${FORMAT}`
        : `got ${show(value)} (rule: ${issue.message}); fix: correct the value, see ${FORMAT}`;
    return [{ ...at, field: pathText(issue.path), message }];
  });
}

function parseFile<T extends { id: string }>(file: string, schema: z.ZodType<T>, keys: string[], kind: string): Parsed<T> {
  const read = readRecords(file);
  const out: Parsed<T> = { records: [], problems: [...read.problems] };
  const seen = new Map<string, number>();
  for (const r of read.records) {
    const raw = r.value as { id?: unknown };
    const id = typeof raw === 'object' && raw !== null && typeof raw.id === 'string' ? raw.id : undefined;
    const parsed = schema.safeParse(r.value);
    if (!parsed.success) {
      out.problems.push(...zodProblems(parsed.error, r.value, file, r.line, id, keys));
      continue;
    }
    const first = seen.get(parsed.data.id);
    if (first !== undefined) {
      out.problems.push({
        file,
        line: r.line,
        instanceId: parsed.data.id,
        field: 'id',
        message: `got ${show(parsed.data.id)}, already used on line ${first} (rule: ${kind} ids are unique in a file); fix: give one of them another id`,
      });
      continue;
    }
    seen.set(parsed.data.id, r.line);
    out.records.push({ line: r.line, value: parsed.data });
  }
  return out;
}

export function validateCorpus(file: string): { docs: CorpusDoc[]; problems: Problem[] } {
  const p = parseFile(file, CorpusDocSchema, Object.keys(CorpusDocSchema.shape), 'document');
  return { docs: p.records.map((r) => r.value), problems: p.problems };
}

/** Questions; with `corpusIds`, every evidence id must name a corpus document. */
export function validateQuestions(file: string, corpusIds?: ReadonlySet<string>): { questions: Question[]; problems: Problem[] } {
  const p = parseFile(file, QuestionSchema, Object.keys(QuestionSchema.shape), 'question');
  for (const { line, value: q } of p.records) {
    const at = { file, line, instanceId: q.id };
    const seen = new Set<string>();
    q.evidenceIds.forEach((e, i) => {
      if (seen.has(e))
        p.problems.push({
          ...at,
          field: `evidenceIds[${i}]`,
          message: `got ${show(e)} twice (rule: each evidence document is listed once); fix: remove the repeat`,
        });
      else if (corpusIds && !corpusIds.has(e))
        p.problems.push({
          ...at,
          field: `evidenceIds[${i}]`,
          message: `got ${show(e)}, which is no document id of the corpus (rule: evidence ids name corpus documents); fix: correct the id or add the document to the corpus`,
        });
      seen.add(e);
    });
  }
  return { questions: p.records.map((r) => r.value), problems: byLine(p.problems) };
}

/** Demonstrations, held to the turn caps; with `questions`, a `questionId` must exist and match. */
export function validateDemonstrations(
  file: string,
  caps: TurnCaps,
  questions?: readonly Question[],
): { demonstrations: Demonstration[]; problems: Problem[] } {
  const p = parseFile(file, DemonstrationSchema, Object.keys(DemonstrationSchema.shape), 'demonstration');
  const byId = questions ? new Map(questions.map((q) => [q.id, q])) : null;
  for (const { line, value: d } of p.records) {
    const at = { file, line, instanceId: d.id };
    const bad = (field: string, message: string) => p.problems.push({ ...at, field, message });
    if (d.refined.length > caps.maxQueries)
      bad('refined', `got ${d.refined.length} queries (rule: at most ${caps.maxQueries}, qref.turn.maxQueries); fix: drop or merge queries`);
    d.refined.forEach((q, i) => {
      if ([...q].length > caps.maxQueryChars)
        bad(`refined[${i}]`, `got ${[...q].length} characters (rule: at most ${caps.maxQueryChars}, qref.turn.maxQueryChars); fix: shorten the query`);
    });
    if ([...d.rationale].length > caps.maxRationaleChars)
      bad(
        'rationale',
        `got ${[...d.rationale].length} characters (rule: at most ${caps.maxRationaleChars}, qref.turn.maxRationaleChars); fix: shorten the rationale`,
      );
    if (!byId || d.questionId === undefined) continue;
    const q = byId.get(d.questionId);
    if (!q) {
      bad('questionId', `got ${show(d.questionId)}, which is no question id (rule: questionId names a question record); fix: correct it or drop the field`);
      continue;
    }
    for (const key of ['split', 'question', 'trace', 'batch'] as const) {
      if (JSON.stringify(d[key]) !== JSON.stringify(q[key]))
        bad(
          key,
          `got ${show(d[key])}, but question ${q.id} has ${show(q[key])} (rule: a demonstration's inputs are its question's); fix: copy the question's ${key}`,
        );
    }
  }
  return { demonstrations: p.records.map((r) => r.value), problems: byLine(p.problems) };
}
