// E2E (real Redis, real processes, synthetic parts): SIGINT stops a run gracefully — no new
// updates, the admitted ones finish, a checkpoint is written at the last one, exit 0 — and
// `gsteer resume` then completes the run with every update recorded exactly once.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, e2eConfig, metricLines, reproducibleMetrics, tempRun, waitFor, writeConfig, removeRuns } from './helpers.ts';

const t = tempRun('sigint');
afterAll(() => removeRuns(t));

describe('e2e: graceful stop', () => {
  it('SIGINT finishes the admitted updates, checkpoints, exits 0; resume completes the run', async () => {
    const over = { grpo: { maxUpdates: 6, learningRate: 0.1, groupsPerUpdate: 1, maxPolicyLag: 1 }, checkpoint: { every: 10, keep: 2 } };
    const env = { GSTEER_SYNTHETIC_TRAIN_MS: '500' };
    const runDir = join(t.dir, 'runs', 'sig');
    const run = cli(['train', '--config', writeConfig(t.dir, e2eConfig(t, 'sig', over))], env);
    await waitFor(() => metricLines(runDir) >= 2, 60_000, 'update 2');
    run.proc.kill('SIGINT');
    const x = await run.done;
    expect(x.code, x.stderr).toBe(0);
    expect(x.stderr).toMatch(/SIGINT: no new updates; finishing the admitted ones/);
    const done = metricLines(runDir);
    expect(done).toBeGreaterThanOrEqual(2);
    expect(done).toBeLessThan(6); // it did stop early
    // every: 10 means this checkpoint exists only because of the stop.
    expect(existsSync(join(runDir, 'checkpoints', `step-${String(done).padStart(6, '0')}`, 'manifest.json'))).toBe(true);
    const resumed = await cli(['resume', runDir], env).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(reproducibleMetrics(runDir).map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
  }, 90_000);
});
