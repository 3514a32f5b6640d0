// QREF data (data/qref/): the written demo set loads clean and its demonstrations do what
// they claim under the real BM25 index (never lose evidence against the agent's batch), and
// bad lines are reported with file, line, id, field, value, rule and fix, all at once.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { QrefSchema } from '../../configs/qref.ts';
import { loadQref } from '../../data/qref/load.ts';
import { validateCorpus, validateDemonstrations, validateQuestions } from '../../data/qref/validate.ts';
import { formatProblem } from '../../data/problem.ts';
import { Bm25Search } from '../../rollout/qref/bm25.ts';
import { InputError } from '../../util/errors.ts';

const CFG = QrefSchema.parse({});
const CAPS = CFG.turn;
const FILES = { corpus: CFG.data.corpus, questions: CFG.data.questions, demonstrations: CFG.data.demonstrations };

describe('the demo set (data/qref/demo)', () => {
  const data = loadQref(FILES, CAPS);

  it('loads clean: corpus, train and test questions, one demonstration per question', () => {
    expect(data.corpus.length).toBeGreaterThanOrEqual(150);
    const splits = new Set(data.questions.map((q) => q.split));
    expect(splits).toEqual(new Set(['train', 'test']));
    const byQuestion = new Map(data.demonstrations.map((d) => [d.questionId, d]));
    for (const q of data.questions) expect(byQuestion.get(q.id)?.split).toBe(q.split);
  });

  it('every demonstration recovers at least the evidence its original batch recovers (BM25 top 3, 5, 10), and more on average', () => {
    const index = new Bm25Search(data.corpus, CFG.search.bm25);
    const byQuestion = new Map(data.demonstrations.map((d) => [d.questionId, d]));
    for (const k of [3, 5, 10]) {
      const recall = (batch: string[], evidence: string[]) => {
        const got = new Set(
          batch.flatMap((q) =>
            index
              .rank(q)
              .slice(0, k)
              .map((h) => h.id),
          ),
        );
        return evidence.filter((e) => got.has(e)).length / evidence.length;
      };
      let original = 0;
      let refined = 0;
      for (const q of data.questions) {
        const o = recall(q.batch, q.evidenceIds);
        const r = recall(byQuestion.get(q.id)!.refined, q.evidenceIds);
        expect(r, `${q.id} at top ${k}`).toBeGreaterThanOrEqual(o);
        original += o;
        refined += r;
      }
      expect(refined).toBeGreaterThan(original);
    }
  });
});

describe('bad QREF lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-qref-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, lines: unknown[]) => {
    const file = join(dir, name);
    writeFileSync(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
    return file;
  };
  const doc = (id: string) => ({ id, title: `T ${id}`, text: `text of ${id}` });
  const question = { id: 'q1', split: 'train', question: 'Which?', evidenceIds: ['d1'], trace: '', batch: ['a query'] };
  const demo = {
    id: 'demo-1',
    questionId: 'q1',
    split: 'train',
    question: 'Which?',
    trace: '',
    batch: ['a query'],
    rationale: 'why',
    refined: ['better query'],
  };

  it('corpus: JSON errors, unknown and missing fields, blank text, repeated ids, each with its line', () => {
    const file = write('corpus.jsonl', [
      doc('d1'),
      '{"id": "d2", ',
      { ...doc('d3'), url: 'http://x' },
      { id: 'd4', title: 'T' },
      { ...doc('d5'), text: '   ' },
      doc('d1'),
    ]);
    const { docs, problems } = validateCorpus(file);
    expect(docs.map((d) => d.id)).toEqual(['d1']);
    const lines = problems.map(formatProblem);
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(new RegExp(`^${file}:2: \\(record\\): not valid JSON`));
    expect(lines[1]).toBe(`${file}:3: [d3] url: unknown field "url" (rule: only id, title, text); fix: remove it or correct the spelling`);
    expect(lines[2]).toBe(
      `${file}:4: [d4] text: missing (rule: Invalid input: expected string, received undefined); fix: add the field, see data/qref/README.md`,
    );
    expect(lines[3]).toBe(`${file}:5: [d5] text: got "   " (rule: must contain a non-space character); fix: correct the value, see data/qref/README.md`);
    expect(lines[4]).toBe(`${file}:6: [d1] id: got "d1", already used on line 1 (rule: document ids are unique in a file); fix: give one of them another id`);
  });

  it('questions: evidence ids outside the corpus or repeated, a multi-line query, a bad split', () => {
    const file = write('questions.jsonl', [
      question,
      { ...question, id: 'q2', evidenceIds: ['d1', 'd9', 'd1'] },
      { ...question, id: 'q3', batch: ['one\ntwo'] },
      { ...question, id: 'q4', split: 'dev' },
      { ...question, id: 'q5', evidenceIds: [] },
    ]);
    const lines = validateQuestions(file, new Set(['d1'])).problems.map(formatProblem);
    expect(lines).toEqual([
      `${file}:2: [q2] evidenceIds[1]: got "d9", which is no document id of the corpus (rule: evidence ids name corpus documents); fix: correct the id or add the document to the corpus`,
      `${file}:2: [q2] evidenceIds[2]: got "d1" twice (rule: each evidence document is listed once); fix: remove the repeat`,
      `${file}:3: [q3] batch[0]: got "one\\ntwo" (rule: must be one line (no line break)); fix: correct the value, see data/qref/README.md`,
      expect.stringMatching(new RegExp(`^${file}:4: \\[q4\\] split: got "dev" \\(rule: .*"train".*"test".*\\); fix:`)),
      expect.stringMatching(new RegExp(`^${file}:5: \\[q5\\] evidenceIds: got \\[\\] \\(rule: .*>=1.*\\); fix:`)),
    ]);
  });

  it('demonstrations: the turn caps, an unknown questionId, inputs that differ from the question', () => {
    const file = write('demonstrations.jsonl', [
      demo,
      { ...demo, id: 'demo-2', refined: ['1', '2', '3', '4', '5', '6'] },
      { ...demo, id: 'demo-3', refined: ['x'.repeat(201)], rationale: 'y'.repeat(401) },
      { ...demo, id: 'demo-4', questionId: 'q404' },
      { ...demo, id: 'demo-5', trace: 'something else', batch: ['another'] },
    ]);
    const qs = validateQuestions(write('q.jsonl', [question])).questions;
    const lines = validateDemonstrations(file, CAPS, qs).problems.map(formatProblem);
    expect(lines).toEqual([
      `${file}:2: [demo-2] refined: got 6 queries (rule: at most 5, qref.turn.maxQueries); fix: drop or merge queries`,
      `${file}:3: [demo-3] refined[0]: got 201 characters (rule: at most 200, qref.turn.maxQueryChars); fix: shorten the query`,
      `${file}:3: [demo-3] rationale: got 401 characters (rule: at most 400, qref.turn.maxRationaleChars); fix: shorten the rationale`,
      `${file}:4: [demo-4] questionId: got "q404", which is no question id (rule: questionId names a question record); fix: correct it or drop the field`,
      `${file}:5: [demo-5] trace: got "something else", but question q1 has "" (rule: a demonstration's inputs are its question's); fix: copy the question's trace`,
      `${file}:5: [demo-5] batch: got ["another"], but question q1 has ["a query"] (rule: a demonstration's inputs are its question's); fix: copy the question's batch`,
    ]);
  });

  it('loadQref refuses the whole set with every problem of every file listed', () => {
    const corpus = write('c2.jsonl', [doc('d1'), doc('d1')]);
    const questions = write('q2.jsonl', [{ ...question, evidenceIds: ['d7'] }]);
    let err: unknown;
    try {
      loadQref({ corpus, questions }, CAPS);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).problems).toEqual([
      expect.stringContaining(`${corpus}:2: [d1] id:`),
      expect.stringContaining(`${questions}:1: [q1] evidenceIds[0]: got "d7"`),
    ]);
    expect(() => loadQref({ corpus: write('empty.jsonl', []), questions }, CAPS)).toThrow(/no documents/);
    expect(() => loadQref({ corpus: join(dir, 'missing.jsonl'), questions }, CAPS)).toThrow(/cannot read/);
  });
});
