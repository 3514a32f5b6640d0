// E2E (real Redis, real processes, synthetic parts): a run SIGKILLed (whole process group)
// after update k and resumed with `gsteer resume` ends byte-identical to an uninterrupted
// run — here with maxPolicyLag 1, so the checkpoint must also carry the lagged adapter —
// and its TensorBoard file holds exactly its metrics.jsonl: one point per update, none of the
// killed run's updates after the checkpoint doubled.
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

describe('e2e: SIGKILL and resume', () => {
  it('a run killed after update 3 and resumed from checkpoint 2 ends byte-identical to an uninterrupted one', async () => {
    const runRef = join(ref.dir, 'runs', 'res');
    const runK = join(k.dir, 'runs', 'res');
    const r = cli(['train', '--config', writeConfig(ref.dir, e2eConfig(ref, 'res', over))], env);
    const killed = cli(['train', '--config', writeConfig(k.dir, e2eConfig(k, 'res', over))], env);
    await waitFor(() => metricLines(runK) >= 3, 60_000, 'update 3 of the run to kill');
    killRun(killed);
    expect((await killed.done).signal).toBe('SIGKILL');
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
