// `gsteer eval --trajectories` end to end: recorded trajectories (a run directory with a
// .json record and a .jsonl file) -> rule extractor -> embedded hashed encoder -> pooled
// metrics, table and JSON report. Numbers by hand (tests/eval/fixture.ts):
//   seen-1 (seen): factors F_SEEN; a and b covered (cos 1), c not; 2 of 3 factors match.
//          asks 2, retrieves 1.
//   uu-1 (unseen_user): max_turns, no q*: nothing covered, no factors. asks 3, retrieves 0.
//   ut-1 (unseen_task): factor "with a quiet neighbourhood" covers f (cos 1). asks 0.
//   overall at 0.55: covered 3 of 6 (R 0.5); matched 3 of 4 (P 0.75); F1 = 2*.75*.5/1.25 = 0.6
//     WCov = (2+1 + 0 + 2) / (4 + 4 + 2) = 0.5; E-WCov = (2 + 0 + 2) / (2+1 + 3 + 2) = 0.5
//     mean Ask = 5/3, mean Retrieve = 1/3.
//   seen: R 2/3, P 2/3, F1 2/3, WCov 3/4, E-WCov 2/3; unseen_task: all 1; both_unseen: empty.
import { describe, it, expect, vi, afterAll } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../cli/commands/eval.ts';
import { targetText, InstanceSchema } from '../../data/schema.ts';
import { cosine } from '../../core/encoder.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import type { EvalReport } from '../../eval/report.ts';
import { trajectory } from '../rollout/helpers/trajectory.ts';
import { F_FLAT, F_SEEN, INSTANCES, Q_FLAT, Q_SEEN, writeDataset, removeDatasets } from './fixture.ts';

afterAll(removeDatasets);

async function quiet<T>(f: () => Promise<T>): Promise<{ value: T; out: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return { value: await f(), out: lines.join('\n') };
  } finally {
    log.mockRestore();
    err.mockRestore();
  }
}

function writeTrajectories(dir: string): string {
  const root = join(dir, 'trajectories');
  mkdirSync(join(root, 'g1'), { recursive: true });
  const seen = {
    ...trajectory(0, [], []),
    instanceId: 'seen-1',
    userId: 'u1',
    askCount: 2,
    askedQuestions: ['q1?', 'q2?'],
    retrieveCount: 1,
    refinedQuery: Q_SEEN,
  };
  writeFileSync(join(root, 'g1', 't0.json'), JSON.stringify(seen));
  const rest = [
    { instanceId: 'uu-1', termination: 'max_turns', refinedQuery: null, askCount: 3, retrieveCount: 0 },
    { instanceId: 'ut-1', termination: 'stop', refinedQuery: Q_FLAT, askCount: 0, retrieveCount: 0 },
  ];
  writeFileSync(join(root, 'more.jsonl'), rest.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return root;
}

describe('gsteer eval --trajectories', () => {
  it('premise: only the identical factor/target pairs clear 0.45 under the hashed encoder', async () => {
    const enc = new HashedEncoder(512);
    const insts = INSTANCES.map((i) => InstanceSchema.parse(i));
    for (const [id, factors] of [
      ['seen-1', F_SEEN],
      ['ut-1', F_FLAT],
    ] as const) {
      const inst = insts.find((i) => i.id === id)!;
      const tv = await enc.embed(inst.targets.map(targetText));
      const fv = await enc.embed([...factors]);
      inst.targets.forEach((t, i) =>
        factors.forEach((f, j) => {
          const c = cosine(tv[i]!, fv[j]!);
          if (targetText(t) === f) expect(c).toBeCloseTo(1, 5);
          else expect(c, `${t.id} vs ${f}`).toBeLessThan(0.45);
        }),
      );
    }
  });

  it('scores a run directory and writes the pooled report', async () => {
    const ds = writeDataset();
    const trajDir = writeTrajectories(ds.dir);
    const out = join(ds.dir, 'report.json');
    const { value: code, out: printed } = await quiet(() => run(['--config', ds.config, '--trajectories', trajDir, '--out', out, '--sweep']));
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    expect(report.method.source).toBe('trajectories');
    expect(report.extractor).toBe('rule');
    expect(report.results.map((r) => r.threshold)).toEqual([0.45, 0.5, 0.55, 0.6, 0.65, 0.7]);
    expect(report.episodes.map((e) => [e.instanceId, e.group, e.factors.map((f) => f.text)])).toEqual([
      ['seen-1', 'seen', F_SEEN],
      ['uu-1', 'unseen_user', []],
      ['ut-1', 'unseen_task', F_FLAT],
    ]);
    const r = report.results.find((x) => x.threshold === 0.55)!;
    expect(r.overall).toMatchObject({
      episodes: 3,
      stopped: 2,
      targets: 6,
      coveredTargets: 3,
      factors: 4,
      matchedFactors: 3,
      weight: 10,
      coveredWeight: 5,
      essentialWeight: 8,
      essentialCoveredWeight: 4,
      precision: 0.75,
      recall: 0.5,
      wcov: 0.5,
      ewcov: 0.5,
    });
    expect(r.overall.f1).toBeCloseTo(0.6, 12);
    expect(r.overall.meanAsk).toBeCloseTo(5 / 3, 12);
    expect(r.overall.meanRetrieve).toBeCloseTo(1 / 3, 12);
    expect(r.groups.seen).toMatchObject({ recall: 2 / 3, precision: 2 / 3, wcov: 0.75, ewcov: 2 / 3 });
    expect(r.groups.unseen_user).toMatchObject({ recall: 0, precision: null, f1: null, wcov: 0, ewcov: 0 });
    expect(r.groups.unseen_task).toMatchObject({ recall: 1, precision: 1, f1: 1, wcov: 1, ewcov: 1 });
    expect(r.groups.both_unseen.episodes).toBe(0);
    // every threshold in the sweep is below 1 and above the premise's 0.45 bound: same numbers
    for (const x of report.results) expect(x.overall.coveredTargets).toBe(3);
    expect(printed).toContain('overall         3  0.5000  0.5000  0.7500  0.5000  0.6000   1.7/0.3       2/3');
    expect(printed).toContain('threshold sweep');
  });

  it('--split test drops the train trajectories; a bad record is refused with file, line and field', async () => {
    const ds = writeDataset();
    const bad = join(ds.dir, 'bad.jsonl');
    writeFileSync(
      bad,
      `${JSON.stringify({ instanceId: 'ut-1', termination: 'stop', refinedQuery: Q_FLAT, askCount: 0, retrieveCount: 0 })}\n${JSON.stringify({ instanceId: 'ut-1', termination: 'stop', refinedQuery: Q_FLAT, askCount: -1, retrieveCount: 0 })}\n`,
    );
    await expect(run(['--config', ds.config, '--trajectories', bad])).rejects.toThrow(`${bad}:2: askCount:`);
    const unknown = join(ds.dir, 'unknown.jsonl');
    writeFileSync(unknown, `${JSON.stringify({ instanceId: 'nope', termination: 'invalid', refinedQuery: null, askCount: 0, retrieveCount: 0 })}\n`);
    await expect(quiet(() => run(['--config', ds.config, '--trajectories', unknown]))).rejects.toThrow(
      `${unknown}:1: instanceId "nope" is not in the configured instances`,
    );
    const mixed = join(ds.dir, 'mixed.jsonl');
    writeFileSync(
      mixed,
      [
        { instanceId: 'train-1', termination: 'stop', refinedQuery: 'Get a tablet.', askCount: 1, retrieveCount: 0 },
        { instanceId: 'ut-1', termination: 'stop', refinedQuery: Q_FLAT, askCount: 0, retrieveCount: 0 },
      ]
        .map((x) => `${JSON.stringify(x)}\n`)
        .join(''),
    );
    const out = join(ds.dir, 'split.json');
    await quiet(() => run(['--config', ds.config, '--trajectories', mixed, '--split', 'test', '--out', out]));
    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    expect(report.episodes.map((e) => e.instanceId)).toEqual(['ut-1']);
    expect(report.results).toHaveLength(1);
  });
});
