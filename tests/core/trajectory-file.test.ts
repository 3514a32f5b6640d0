// core/trajectory-file.ts: a trajectory comes back from its file as it went in (a run's
// t<i>.json and a .trajectories.jsonl), a bad line is an InputError naming file:line, and
// only a whole trajectory of the asked group and position is kept on resume.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrajectories, readTrajectory, readWholeTrajectory, writeTrajectories, writeTrajectory } from '../../core/trajectory-file.ts';
import type { Trajectory } from '../../core/types.ts';
import { InputError } from '../../util/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-trajectory-file-'));

// One ASK turn then STOP, written out by hand (core/types.ts), with a unicode answer.
const traj = (index: number): Trajectory => ({
  version: 1,
  runId: 'r1',
  instanceId: 'i1',
  userId: 'u1',
  groupId: 's000001-g0',
  index,
  policyVersion: 3,
  snapshotId: 'snap',
  turns: [
    {
      index: 0,
      tokens: { promptIds: [1, 2, 3], completionIds: [4, 5], logprobs: [-0.5, -1.25], policyVersion: 3 },
      completionText: 'ASK: which city?',
      parsed: { ok: false, reason: 'env_turn', detail: '' },
      observation: { kind: 'answer', question: 'which city?', answer: 'Zürich — near the lake', targetId: 't1' },
    },
  ],
  finalSlots: [{ name: 'city', purpose: 'where', value: 'Zürich', status: 'covered', source: 'dialogue' }],
  askedQuestions: ['which city?'],
  retrieveCount: 0,
  askCount: 1,
  termination: 'stop',
  refinedQuery: 'flats in Zürich',
});

describe('trajectory files', () => {
  it("a run's t<i>.json: written and read back deep-equal, one line of JSON", async () => {
    const file = join(dir, 't0.json');
    await writeTrajectory(file, traj(0), false);
    expect(readFileSync(file, 'utf8')).toBe(JSON.stringify(traj(0)));
    expect(readTrajectory(file)).toEqual(traj(0));
    expect(readTrajectories(file)).toEqual([{ where: `${file}:1`, value: traj(0) }]);
  });

  it('a .trajectories.jsonl: one record per line, each with its file:line', () => {
    const file = join(dir, 'a.trajectories.jsonl');
    writeTrajectories(file, [traj(0), traj(1)]);
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(3); // two lines and the final newline
    expect(readTrajectories(file)).toEqual([
      { where: `${file}:1`, value: traj(0) },
      { where: `${file}:2`, value: traj(1) },
    ]);
  });

  it('a malformed line is an InputError naming file:line and the rule, without a stack in the message', () => {
    const file = join(dir, 'bad.trajectories.jsonl');
    writeFileSync(file, `${JSON.stringify(traj(0))}\n\n{"version": 1, "turns": [\n`);
    let err: unknown;
    try {
      readTrajectories(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    const { message, problems } = err as InputError;
    expect(problems).toEqual([message]);
    expect(message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3: not valid JSON \\(.+\\); each line must be one JSON object$`));
    expect(message).not.toMatch(/\n\s+at /);
  });

  it('a torn .json file is an InputError naming the file', () => {
    const file = join(dir, 'torn.json');
    writeFileSync(file, JSON.stringify(traj(0)).slice(0, 40));
    expect(() => readTrajectory(file)).toThrow(InputError);
    expect(() => readTrajectory(file)).toThrow(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not a JSON trajectory \\(`));
    expect(() => readTrajectory(join(dir, 'missing.json'))).toThrow(/missing\.json: cannot read \(ENOENT/);
  });

  it('resume keeps only a whole trajectory of the asked group and position', async () => {
    const file = join(dir, 't2.json');
    await writeTrajectory(file, traj(2), false);
    expect(readWholeTrajectory(file, 's000001-g0', 2)).toEqual(traj(2));
    expect(readWholeTrajectory(file, 's000001-g0', 1)).toBeNull(); // another position
    expect(readWholeTrajectory(file, 's000001-g1', 2)).toBeNull(); // another group
    expect(readWholeTrajectory(join(dir, 'torn.json'), 's000001-g0', 0)).toBeNull();
    expect(readWholeTrajectory(join(dir, 'missing.json'), 's000001-g0', 0)).toBeNull();
    const cut = traj(3);
    cut.turns[0]!.tokens.logprobs.pop(); // completion ids and logprobs of unequal length
    await writeTrajectory(join(dir, 't3.json'), cut, false);
    expect(readWholeTrajectory(join(dir, 't3.json'), 's000001-g0', 3)).toBeNull();
  });
});
