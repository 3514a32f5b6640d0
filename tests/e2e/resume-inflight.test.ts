// E2E (issue 35 item 3): resume keeps what was in flight. With maxPolicyLag 2 and a slow
// trainer, the rollouts of the updates after the checkpoint run ahead; the run is SIGKILLed
// (whole process group) with their episodes finished on disk but not trained, then resumed.
// The resumed run keeps those episodes (episodes/reused), samples the others again from the
// same seeds, and ends byte-identical to an uninterrupted run. Counted: every episode of the
// run is trained exactly once (its group file), and its policy call is on record exactly
// once (llm_calls.jsonl, tagged by group and episode): nothing lost, nothing duplicated.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { adapterBytes, cli, e2eConfig, killRun, metricLines, removeRuns, reproducibleMetrics, tempRun, waitFor, writeConfig } from './helpers.ts';

const ref = tempRun('inf-ref');
const k = tempRun('inf-kill');
k.instances = ref.instances;
const UPDATES = 6;
const G = 4;
const over = { grpo: { maxUpdates: UPDATES, learningRate: 0.1, groupsPerUpdate: 1, maxPolicyLag: 2 }, checkpoint: { every: 2, keep: 3 } };
const env = { GSTEER_SYNTHETIC_TRAIN_MS: '700' };

afterAll(() => removeRuns(ref, k));

/** Trajectory files of updates after `step` (episodes that finished but were not trained). */
const inFlightOnDisk = (run: string, step: number) =>
  readdirSync(join(run, 'trajectories'))
    .filter((g) => Number(g.slice(1, 7)) > step)
    .flatMap((g) => readdirSync(join(run, 'trajectories', g)).filter((f) => /^t\d+\.json$/.test(f))).length;

describe('e2e: resume with episodes in flight', () => {
  it('a run killed with finished episodes in flight keeps them on resume: nothing lost, nothing duplicated', async () => {
    const runRef = join(ref.dir, 'runs', 'inf');
    const runK = join(k.dir, 'runs', 'inf');
    const r = cli(['train', '--config', writeConfig(ref.dir, e2eConfig(ref, 'inf', over))], env);
    const killed = cli(['train', '--config', writeConfig(k.dir, e2eConfig(k, 'inf', over))], env);
    await waitFor(() => metricLines(runK) >= 3 && existsSync(join(runK, 'checkpoints', 'step-000002')), 90_000, 'update 3 of the run to kill');
    killRun(killed);
    expect((await killed.done).signal).toBe('SIGKILL');
    const ckpt = Math.max(
      ...readdirSync(join(runK, 'checkpoints'))
        .filter((n) => /^step-\d{6}$/.test(n))
        .map((n) => Number(n.slice(5))),
    );
    const onDisk = inFlightOnDisk(runK, ckpt);
    expect(onDisk).toBeGreaterThan(0); // finished episodes of updates the checkpoint does not hold
    const resumed = await cli(['resume', runK], env).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    const x = await r.done;
    expect(x.code, x.stderr).toBe(0);

    // The same run as an uninterrupted one.
    const mRef = reproducibleMetrics(runRef);
    expect(mRef.map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(reproducibleMetrics(runK)).toEqual(mRef);
    expect(adapterBytes(runK, UPDATES).equals(adapterBytes(runRef, UPDATES))).toBe(true);
    // Kept: the resumed updates reused the episodes found on disk (those of updates it re-ran).
    const metrics = readMetrics(join(runK, 'metrics.jsonl'));
    const reused = metrics.filter((m) => (m.step as number) > ckpt).reduce((n, m) => n + (m['episodes/reused'] as number), 0);
    expect(reused).toBeGreaterThan(0);
    expect(reused).toBeLessThanOrEqual(onDisk);
    // Counted: each of the 24 episodes trained exactly once, its policy call on record exactly once.
    const trained = new Map<string, number>();
    for (let s = 1; s <= UPDATES; s++) {
      const g = readGroupFile(join(runK, 'groups', `s00000${s}-g0.json`));
      expect(g.dropped).toBe(false);
      for (const p of g.trajPaths) trained.set(p, (trained.get(p) ?? 0) + 1);
    }
    expect(trained.size).toBe(UPDATES * G);
    expect([...trained.values()].every((n) => n === 1)).toBe(true);
    expect(metrics.reduce((n, m) => n + (m['episodes/started'] as number), 0)).toBe(UPDATES * G);
    const calls = new Map<string, number>();
    for (const line of readFileSync(join(runK, 'llm_calls.jsonl'), 'utf8').split('\n').filter(Boolean)) {
      const c = JSON.parse(line) as { role: string; groupId: string; episode: number };
      if (c.role === 'policy') calls.set(`${c.groupId}/${c.episode}`, (calls.get(`${c.groupId}/${c.episode}`) ?? 0) + 1);
    }
    expect(calls.size).toBe(UPDATES * G);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
  }, 150_000);
});
