// Which user states evaluation freezes (paper "Settings": the final online states of GRPO,
// frozen; unseen users empty; test interactions never write) and that they stay frozen.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { frozenStatesSource } from '../../eval/evaluate.ts';
import { loadConfig } from '../../configs/load.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { finalRunStates, frozenUserStates } from '../../eval/user-states.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { validateRunInputs } from '../../workers/prepare.ts';
import { InputError } from '../../util/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-frozen-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const state = (userId: string, value: string) =>
  JSON.stringify({ userId, profile: '', memories: [{ name: 'budget', purpose: 'spending limit', value, sourceInstance: 'i-train' }] });
const inst = (id: string, userId: string, split: 'train' | 'test') =>
  InstanceSchema.parse({
    id,
    userId,
    taskId: 't',
    split,
    query: 'Which laptop?',
    targets: [{ id: 'budget', description: 'budget', seedQuestion: 'Budget?', seedAnswer: 'Under 1200 EUR.', weight: 1 }],
  });

describe("evaluation freezes the run's final user states", () => {
  const run = join(dir, 'run');
  for (const [step, value] of [
    [2, 'step two'],
    [10, 'step ten'],
    [9, 'step nine'],
  ] as const) {
    mkdirSync(join(run, 'steps', `step-${String(step).padStart(6, '0')}`), { recursive: true });
    writeFileSync(join(run, 'steps', `step-${String(step).padStart(6, '0')}`, 'user_states.jsonl'), `${state('u1', value)}\n`);
  }
  mkdirSync(join(run, 'steps', 'step-000011')); // an update that wrote no states yet

  it('--run picks the highest step that wrote user_states.jsonl, and says so', () => {
    expect(finalRunStates(run)).toEqual({ file: join(run, 'steps', 'step-000010', 'user_states.jsonl'), step: 10 });
    const cfg = loadConfig([], []);
    expect(frozenStatesSource(cfg, { run })).toEqual({
      file: join(run, 'steps', 'step-000010', 'user_states.jsonl'),
      why: `--run: the final states of ${run}, update 10`,
    });
    expect(() => finalRunStates(join(dir, 'nothing'))).toThrow(InputError);
    expect(() => frozenStatesSource(cfg, { run, 'user-states': 'x' })).toThrow(/pass one/);
  });

  it('without --run or --user-states: the states GRPO starts from (empty by default, not data.userStates)', () => {
    expect(frozenStatesSource(loadConfig([], []), {})).toEqual({
      file: null,
      why: 'no --run, --user-states or grpo.initialUserStates: every user starts empty',
    });
    expect(frozenStatesSource(loadConfig([], ['grpo.initialUserStates=s.jsonl']), {}).file).toBe('s.jsonl');
  });

  it('the frozen store refuses writes; unseen users start empty', async () => {
    const file = finalRunStates(run).file;
    writeFileSync(file, `${state('u1', 'step ten')}\n${state('u-unseen', 'leak')}\n`);
    const frozen = await frozenUserStates(
      [file],
      [inst('i-train', 'u1', 'train'), inst('i-test', 'u1', 'test'), inst('i-test2', 'u-unseen', 'test')],
      new HashedEncoder(64),
    );
    expect(frozen.loaded).toEqual(['u1']);
    expect(frozen.dropped).toEqual(['u-unseen']);
    expect((await frozen.store.read('u1', 1)).memories.map((m) => m.value)).toEqual(['step ten']);
    await expect(frozen.store.update('u1', { memories: [{ name: 'x', purpose: 'y', value: 'z', sourceInstance: 'i-test' }] })).rejects.toThrow(
      /never update user states/,
    );
    expect(await frozen.store.latestVersion('u1')).toBe(1);
  });
});

describe('GRPO starts from grpo.initialUserStates, else empty', () => {
  const instances = join(dir, 'instances.jsonl');
  writeFileSync(instances, `${JSON.stringify(inst('i-train', 'u1', 'train'))}\n`);
  const states = join(dir, 'states.jsonl');
  writeFileSync(states, `${state('u1', 'offline')}\n`);

  it('data.userStates (the offline state) is not what GRPO starts from', () => {
    expect(validateRunInputs(loadConfig([], ['policy.model=models/tiny-demo', `data.instances=[${instances}]`, `data.userStates=${states}`])).states).toEqual(
      [],
    );
    expect(
      validateRunInputs(loadConfig([], ['policy.model=models/tiny-demo', `data.instances=[${instances}]`, `grpo.initialUserStates=${states}`])).states.map(
        (s) => s.userId,
      ),
    ).toEqual(['u1']);
    expect(() =>
      validateRunInputs(
        loadConfig([], ['policy.model=models/tiny-demo', `data.instances=[${instances}]`, `grpo.initialUserStates=${join(dir, 'missing.jsonl')}`]),
      ),
    ).toThrow(/grpo.initialUserStates = .*missing.jsonl: file not found/);
  });
});
