// E2E (real Redis, real processes, synthetic parts): a run SIGKILLed (whole process group)
// after update k and resumed with `gsteer resume` ends byte-identical to an uninterrupted
// run — here with maxPolicyLag 1, so the checkpoint must also carry the lagged adapter —
// and its TensorBoard file holds exactly its metrics.jsonl: one point per update, none of the
// killed run's updates after the checkpoint doubled. Per-update files are not fsynced
// (util/run-file.ts), so before resuming the test does what a machine crash may do to the
// newest ones: empties or cuts trajectories, loses group files and user-state dumps, and
// leaves temp files; resume must rewrite them all.
import { existsSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics } from '../../monitor/sink.ts';
import { readRunEvents, scalarSeries, seriesOfMetrics } from '../monitor/tfevents-reader.ts';
import { adapterBytes, cli, e2eConfig, killRun, metricLines, reproducibleMetrics, tempRun, waitFor, writeConfig, removeRuns } from './helpers.ts';

const ref = tempRun('res-ref');
const k = tempRun('res-kill');
k.instances = ref.instances;
const over = { grpo: { maxUpdates: 5, learningRate: 0.1, groupsPerUpdate: 1, maxPolicyLag: 1 }, checkpoint: { every: 2, keep: 2 } };
const env = { GSTEER_SYNTHETIC_TRAIN_MS: '300' };

afterAll(() => removeRuns(ref, k));

/** What a crash may leave of the per-update files of steps >= `from` (which includes the checkpoint's). */
function damagePerUpdateFiles(run: string, from: number): number {
  const stepOf = (name: string) => Number(/^s(\d{6})-g\d+/.exec(name)?.[1] ?? /^step-(\d{6})$/.exec(name)?.[1] ?? -1);
  let damaged = 0;
  for (const g of readdirSync(join(run, 'trajectories')).filter((n) => stepOf(n) >= from))
    for (const [i, t] of readdirSync(join(run, 'trajectories', g)).entries()) {
      const f = join(run, 'trajectories', g, t);
      truncateSync(f, i % 2 ? Math.floor(statSync(f).size / 2) : 0); // empty or cut short
      writeFileSync(`${f}.tmp-1-0123abcd`, '{"partial');
      damaged++;
    }
  for (const g of readdirSync(join(run, 'groups')).filter((n) => stepOf(n) >= from)) {
    rmSync(join(run, 'groups', g));
    damaged++;
  }
  for (const d of readdirSync(join(run, 'steps')).filter((n) => stepOf(n) >= from)) {
    const f = join(run, 'steps', d, 'user_states.jsonl');
    if (existsSync(f)) truncateSync(f, 0);
    damaged++;
  }
  return damaged;
}

describe('e2e: SIGKILL and resume', () => {
  it('a run killed after update 3 and resumed from checkpoint 2 ends byte-identical to an uninterrupted one', async () => {
    const runRef = join(ref.dir, 'runs', 'res');
    const runK = join(k.dir, 'runs', 'res');
    const r = cli(['train', '--config', writeConfig(ref.dir, e2eConfig(ref, 'res', over))], env);
    const killed = cli(['train', '--config', writeConfig(k.dir, e2eConfig(k, 'res', over))], env);
    await waitFor(() => metricLines(runK) >= 3, 60_000, 'update 3 of the run to kill');
    killRun(killed);
    expect((await killed.done).signal).toBe('SIGKILL');
    const ckpts = readdirSync(join(runK, 'checkpoints'))
      .filter((n) => /^step-\d{6}$/.test(n))
      .map((n) => Number(n.slice(5)));
    expect(damagePerUpdateFiles(runK, Math.max(...ckpts))).toBeGreaterThan(0);
    const resumed = await cli(['resume', runK], env).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/from checkpoint step [24]/); // 2, or 4 if update 4 landed before the kill
    const x = await r.done;
    expect(x.code, x.stderr).toBe(0);
    const mRef = reproducibleMetrics(runRef);
    expect(mRef.map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
    expect(mRef.map((m) => m.policy_lag)).toEqual([0, 1, 1, 1, 1]);
    expect(reproducibleMetrics(runK)).toEqual(mRef);
    expect(adapterBytes(runK, 5).equals(adapterBytes(runRef, 5))).toBe(true);
    for (const run of [runRef, runK]) {
      const series = scalarSeries(readRunEvents(run));
      expect(series.get('reward')?.map(([step]) => step)).toEqual([1, 2, 3, 4, 5]);
      expect(series).toEqual(seriesOfMetrics(readMetrics(join(run, 'metrics.jsonl'))));
    }
    // gsteer train's stdout (not a terminal here): one line per update, each with its ETA
    expect(x.stdout.match(/^step [1-5]\/5 {2}reward .* eta \d+:\d\d$/gm)?.length).toBe(5);
  }, 120_000);
});
