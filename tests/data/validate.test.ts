import { describe, expect, it, vi } from 'vitest';
import { join } from 'node:path';
import { validateFiles, formatProblem, type Problem } from '../../data/validate.ts';
import { loadInstances, loadUserStates } from '../../data/load.ts';
import { fileKind, readRecords } from '../../data/read.ts';
import { InputError } from '../../util/errors.ts';
import { run as dataCommand } from '../../cli/commands/data.ts';

const fx = (name: string) => join(import.meta.dirname, '../fixtures/data', name);

// One fixture per fault (tests/fixtures/data/); the faulty record's line and field.
const FAULTS: [file: string, line: number, id: string | undefined, field: string, message: RegExp][] = [
  ['dup-instance-id.jsonl', 2, 'fx-1', 'id', /duplicate instance id "fx-1" \(first at .*dup-instance-id\.jsonl:1\)/],
  ['dup-target-id.jsonl', 2, 'fx-1', 'targets[2].id', /duplicate target id "budget" \(first at targets\[0\]\)/],
  ['unknown-edge.jsonl', 2, 'fx-1', 'edges[1][1]', /unknown target "colour"/],
  ['cycle.jsonl', 2, 'fx-1', 'edges', /cycle budget -> frame_size -> groupset -> budget/],
  ['negative-weight.jsonl', 2, 'fx-1', 'targets[1].weight', /weight -0\.5 is negative/],
  ['infinite-weight.jsonl', 2, 'fx-1', 'targets[1].weight', /weight Infinity is not finite/],
  ['string-weight.jsonl', 2, 'fx-1', 'targets[0].weight', /weight "2" is not a number/],
  ['missing-weight.jsonl', 2, 'fx-1', 'targets[1].weight', /required field is missing/],
  ['no-targets.jsonl', 2, 'fx-1', 'targets', /no targets/],
  ['empty-seed-answer.jsonl', 2, 'fx-1', 'targets[1].seedAnswer', /empty seed answer "   "/],
  ['late-no-parent.jsonl', 2, 'fx-1', 'targets[2].lateActivatable', /"groupset" is lateActivatable but has no parent/],
  ['unknown-split.jsonl', 2, 'fx-1', 'split', /unknown split "validation"; split must be one of train\|test/],
  ['type-error.jsonl', 2, 'fx-1', 'targets[0].essential', /expected boolean.*got "yes"/],
  ['unknown-field.jsonl', 2, 'fx-1', 'persona_notes', /unknown field "persona_notes"/],
  ['bad-json.jsonl', 2, undefined, '(record)', /not valid JSON/],
  ['user_states-dup.jsonl', 2, 'u1', 'userId', /duplicate userId "u1"/],
  ['user_states-empty-memory.jsonl', 1, 'u1', 'memories[1].value', /empty memory value/],
  ['states-by-content.jsonl', 2, 'u2', 'memories[0].value', /empty memory value ""/],
];

describe('data validation', () => {
  it.each(FAULTS)('%s: reported once at line %i', (file, line, id, field, message) => {
    const problems = validateFiles([fx(file)]);
    expect(problems).toHaveLength(1);
    const p = problems[0] as Problem;
    expect(p).toMatchObject({ file: fx(file), line, field });
    expect(p.instanceId).toBe(id);
    expect(p.message).toMatch(message);
  });

  it('clean files yield no problems', () => {
    expect(validateFiles([fx('clean.jsonl'), fx('user_states-clean.jsonl')])).toEqual([]);
  });

  it('duplicate instance ids are caught across files', () => {
    const problems = validateFiles([fx('clean.jsonl'), fx('dup-across-files.jsonl')]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: fx('dup-across-files.jsonl'), line: 2, instanceId: 'fx-2', field: 'id' });
    expect(problems[0]?.message).toContain(`first at ${fx('clean.jsonl')}:2`);
  });

  it('reports every fault of one record, not just the first', () => {
    const fields = validateFiles([fx('multi-fault.jsonl')]).map((p) => p.field);
    expect(fields.sort()).toEqual(['edges[0][1]', 'split', 'targets[0].weight', 'targets[1].seedAnswer', 'targets[2].lateActivatable']);
  });

  it('an unreadable file is a problem, not a crash', () => {
    const [p] = validateFiles([fx('does-not-exist.jsonl')]);
    expect(p).toMatchObject({ line: 0, field: '(file)' });
    expect(p?.message).toMatch(/cannot read/);
  });

  it('formats problems as file:line: [id] field: message', () => {
    expect(formatProblem({ file: 'a.jsonl', line: 3, instanceId: 'x', field: 'split', message: 'm' })).toBe('a.jsonl:3: [x] split: m');
    expect(formatProblem({ file: 'a.jsonl', line: 3, field: '(record)', message: 'm' })).toBe('a.jsonl:3: (record): m');
  });

  it('detects user-state files by name or by content', () => {
    expect(readRecords(fx('user_states-clean.jsonl')).kind).toBe('user_states');
    expect(readRecords(fx('states-by-content.jsonl')).kind).toBe('user_states');
    expect(readRecords(fx('clean.jsonl')).kind).toBe('instances');
    expect(fileKind('x.jsonl', [])).toBe('instances');
  });
});

describe('loading', () => {
  it('loadInstances returns parsed instances with schema defaults', () => {
    const xs = loadInstances([fx('clean.jsonl')]);
    expect(xs.map((i) => i.id)).toEqual(['fx-1', 'fx-2']);
    expect(xs[0]?.targets[2]).toMatchObject({ id: 'groupset', essential: false, lateActivatable: true });
    expect(loadUserStates([fx('user_states-clean.jsonl')]).map((s) => s.userId)).toEqual(['u1', 'u2']);
  });

  it('loadInstances throws one InputError listing every problem', () => {
    let err: unknown;
    try {
      loadInstances([fx('multi-fault.jsonl'), fx('cycle.jsonl')]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    // 5 in multi-fault + the cycle + fx-1 defined again in cycle.jsonl (ids are global)
    expect((err as InputError).problems).toHaveLength(7);
    expect((err as InputError).message).toMatch(/cycle\.jsonl:2: \[fx-1\] id: duplicate instance id "fx-1" \(first at .*multi-fault\.jsonl:1\)/);
    expect((err as InputError).message).toContain('cycle.jsonl:2: [fx-1] edges: the IEG has a cycle');
  });

  it('loadInstances refuses a user-state file', () => {
    expect(() => loadInstances([fx('user_states-clean.jsonl')])).toThrow(/looks like a user_states file/);
  });
});

describe('gsteer data', () => {
  const capture = async (argv: string[]) => {
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((s: string) => void lines.push(s));
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      return { code: await dataCommand(argv), lines };
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  };

  it('validate exits 0 on clean data and 1 with each problem printed', async () => {
    expect((await capture(['validate', fx('clean.jsonl')])).code).toBe(0);
    const bad = await capture(['validate', fx('negative-weight.jsonl')]);
    expect(bad.code).toBe(1);
    expect(bad.lines).toContain(
      `${fx('negative-weight.jsonl')}:2: [fx-1] targets[1].weight: weight -0.5 is negative; w_i must be >= 0 (method §2); use 0 to ignore the target or a positive importance`,
    );
    expect(bad.lines.at(-1)).toMatch(/^1 problem\(s\)/);
  });

  it('stats --json prints the counts', async () => {
    const out = await capture(['stats', '--json', fx('clean.jsonl'), fx('user_states-clean.jsonl')]);
    expect(out.code).toBe(0);
    const s = JSON.parse(out.lines.join('\n'));
    expect(s).toMatchObject({ instances: 2, bySplit: { train: 1, test: 1 }, targets: 6, edges: 2, lateActivatable: 2 });
    expect(s.evalGroups).toEqual({ seen: 0, unseen_user: 1, unseen_task: 0, both_unseen: 0 });
  });
});
