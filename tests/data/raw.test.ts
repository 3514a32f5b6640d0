import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRawDir } from '../../data/raw/read.ts';

const demo = join(import.meta.dirname, '../../data/raw-demo');

function rawDir(files: Partial<Record<'tasks' | 'users' | 'pairs', unknown[]>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-raw-'));
  const base = {
    tasks: [{ id: 't1', domain: 'travel', query: 'Plan a trip.', rubric: [{ criterion: 'Respects the budget', weight: 1 }] }],
    users: [{ id: 'u1', persona: { age: 30, diet: ['vegan'] }, context: ['likes trains'] }],
    pairs: [{ userId: 'u1', taskId: 't1' }],
  };
  for (const k of ['tasks', 'users', 'pairs'] as const) {
    const rows = files[k] ?? base[k];
    writeFileSync(join(dir, `${k}.jsonl`), rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
  }
  return dir;
}

describe('raw PDR-Bench-shaped input', () => {
  it('reads the demo set: 6 users, 5 tasks, 20 pairs, pair queries and rubrics resolved', () => {
    const { dataset, problems } = readRawDir(demo);
    expect(problems).toEqual([]);
    expect(dataset?.users).toHaveLength(6);
    expect(dataset?.tasks).toHaveLength(5);
    expect(dataset?.pairs).toHaveLength(20);
    const first = dataset?.pairs[0];
    expect(first?.id).toBe('maya-trip');
    expect(first?.query).toMatch(/^Can you research a summer vacation/); // the pair's own wording
    expect(dataset?.pairs[1]?.query).toBe('Which laptop should I buy?'); // the task's query
    expect(first?.rubric).toHaveLength(8);
  });

  it('a clean minimal folder reads', () => {
    expect(readRawDir(rawDir({})).problems).toEqual([]);
  });

  const CASES: [string, Partial<Record<'tasks' | 'users' | 'pairs', unknown[]>>, string, number, string, RegExp][] = [
    [
      'negative rubric weight',
      { tasks: [{ id: 't1', domain: 'd', query: 'q', rubric: [{ criterion: 'c', weight: -1 }] }] },
      'tasks.jsonl',
      1,
      'rubric[0].weight',
      /got -1.*data\/raw\/schema\.ts/,
    ],
    [
      'unknown rubric field',
      { tasks: [{ id: 't1', domain: 'd', query: 'q', rubric: [{ criterion: 'c', weight: 1, wieght: 2 }] }] },
      'tasks.jsonl',
      1,
      'rubric[0].wieght',
      /unknown field "wieght".*allowed: id, criterion, weight, dimension/,
    ],
    ['nested persona', { users: [{ id: 'u1', persona: { home: { city: 'Oslo' } } }] }, 'users.jsonl', 1, 'persona.home', /nested object.*flatten it/],
    ['missing persona', { users: [{ id: 'u1' }] }, 'users.jsonl', 1, 'persona', /required field is missing/],
    ['unknown user', { pairs: [{ userId: 'u9', taskId: 't1' }] }, 'pairs.jsonl', 1, 'userId', /unknown user "u9".*\(u1\)/],
    [
      'duplicate pair',
      {
        pairs: [
          { userId: 'u1', taskId: 't1' },
          { userId: 'u1', taskId: 't1', id: 'other' },
        ],
      },
      'pairs.jsonl',
      2,
      '(record)',
      /listed twice \(first at .*pairs\.jsonl:1\)/,
    ],
    ['no rubric', { tasks: [{ id: 't1', domain: 'd', query: 'q' }] }, 'pairs.jsonl', 1, 'rubric', /no rubric items/],
    ['bad JSON', { pairs: ['{"userId": "u1",'] }, 'pairs.jsonl', 1, '(record)', /not valid JSON/],
    [
      'duplicate task',
      {
        tasks: [
          { id: 't1', domain: 'd', query: 'q', rubric: [{ criterion: 'c', weight: 1 }] },
          { id: 't1', domain: 'd', query: 'q2' },
        ],
      },
      'tasks.jsonl',
      2,
      'id',
      /duplicate task id "t1"/,
    ],
  ];
  it.each(CASES)('%s: reported once with file, line, field and fix', (_name, files, file, line, field, message) => {
    const { dataset, problems } = readRawDir(rawDir(files));
    expect(dataset).toBeUndefined();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line, field });
    expect(problems[0]?.file.endsWith(file)).toBe(true);
    expect(problems[0]?.message).toMatch(message);
  });
});
