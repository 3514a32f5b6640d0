// The rollout worker's record of an episode (workers/episode-record.ts): every turn is
// tagged with the job's adapter version and a turn sampled by another version is refused
// (an episode finishes on the adapter it started with, method §5.7); a trajectory file on
// disk is kept instead of sampling again only when it is whole and of this very job.
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Trajectory, TurnRecord } from '../../core/types.ts';
import { reusableTrajectory, tagVersions } from '../../workers/episode-record.ts';
import type { RolloutJob } from '../../workers/payloads.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-episode-record-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const job: RolloutJob = {
  v: 1,
  runId: 'r',
  epoch: 1,
  step: 3,
  groupId: 's000003-g0',
  index: 2,
  instanceId: 'i0',
  userId: 'u0',
  policyVersion: 1,
  model: 'policy-v1',
  snapshotId: 'u0@abc',
  seed: 7,
  trajPath: 'trajectories/s000003-g0/t2.json',
};

const turn = (index: number, policyVersion?: number): TurnRecord => ({
  index,
  tokens: { promptIds: [1, 2], completionIds: [1001, 1002], logprobs: [-0.5, -1.5], ...(policyVersion === undefined ? {} : { policyVersion }) },
  completionText: 'x',
  parsed: { ok: false, reason: 'truncated', detail: '' },
  observation: { kind: 'none' },
});

const traj = (turns: TurnRecord[], over: Partial<Trajectory> = {}): Trajectory => ({
  version: 1,
  runId: 'r',
  instanceId: 'i0',
  userId: 'u0',
  groupId: 's000003-g0',
  index: 2,
  policyVersion: 1,
  snapshotId: 'u0@abc',
  turns,
  finalSlots: [],
  askedQuestions: [],
  retrieveCount: 0,
  askCount: 0,
  termination: 'invalid',
  refinedQuery: null,
  ...over,
});

describe('episode record', () => {
  it('tags every turn with the job adapter version', () => {
    const t = tagVersions(traj([turn(0), turn(1)]), job);
    expect(t.turns.map((x) => x.tokens.policyVersion)).toEqual([1, 1]);
  });

  it('refuses an episode whose later turn was sampled by a newer adapter', () => {
    expect(() => tagVersions(traj([turn(0, 1), turn(1, 2)]), job)).toThrow(
      /turn 1 was sampled by adapter version 2, but the job samples version 1 \(policy-v1\); an episode must finish on the adapter it started with/,
    );
  });

  it('keeps a whole trajectory of this very job, and nothing else', () => {
    const file = (name: string, t: Trajectory | string) => {
      const p = join(dir, name);
      writeFileSync(p, typeof t === 'string' ? t : JSON.stringify(t));
      return p;
    };
    const whole = tagVersions(traj([turn(0), turn(1)]), job);
    expect(reusableTrajectory(file('whole.json', whole), job)).toEqual(whole);
    expect(reusableTrajectory(join(dir, 'absent.json'), job)).toBeNull();
    const cut = file('cut.json', whole);
    truncateSync(cut, 40); // written without fsync, cut short by a crash
    expect(reusableTrajectory(cut, job)).toBeNull();
    expect(reusableTrajectory(file('empty.json', ''), job)).toBeNull();
    expect(reusableTrajectory(file('untagged.json', traj([turn(0)])), job)).toBeNull(); // written before version tags
    expect(reusableTrajectory(file('snap.json', { ...whole, snapshotId: 'u0@def' }), job)).toBeNull(); // other user state
    const newer = { ...job, policyVersion: 2, model: 'policy-v2' };
    expect(reusableTrajectory(file('version.json', tagVersions(traj([turn(0)], { policyVersion: 2 }), newer)), job)).toBeNull(); // another adapter
    expect(reusableTrajectory(join(dir, 'whole.json'), newer)).toBeNull();
    expect(reusableTrajectory(file('index.json', { ...whole, index: 1 }), job)).toBeNull();
    const uneven = { ...whole, turns: [{ ...whole.turns[0]!, tokens: { ...whole.turns[0]!.tokens, logprobs: [-0.5] } }] };
    expect(reusableTrajectory(file('uneven.json', uneven), job)).toBeNull();
  });
});
