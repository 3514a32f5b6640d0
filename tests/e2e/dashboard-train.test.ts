// E2E (real Redis, real processes, synthetic parts): `gsteer train --dashboard` serves the
// run it trains, live from the run's Redis stream, prints the URL, and on exit says how to
// reopen it. The records it served are the run's own, with the wait times and counts the
// controller adds.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMetrics, type MetricsRecord } from '../../monitor/sink.ts';
import { cli, e2eConfig, removeRuns, sleep, tempRun, waitFor, writeConfig } from './helpers.ts';

const t = tempRun('dash');
afterAll(() => removeRuns(t));

describe('e2e: gsteer train --dashboard', () => {
  it('serves the run while it trains and prints its URL', async () => {
    const run = cli(['train', '--config', writeConfig(t.dir, e2eConfig(t, 'dsh')), '--dashboard', '--dashboard-port', '0'], {
      GSTEER_SYNTHETIC_LATENCY_MS: '300',
    });
    let err = '';
    run.proc.stderr!.on('data', (d) => (err += d));
    await waitFor(() => /dashboard on (http:\S+)/.test(err), 60_000, 'the dashboard URL');
    const page = /dashboard on (http:\S+)/.exec(err)![1]!;
    expect(page).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/runs\/dsh$/);
    let served: { live: string; records: MetricsRecord[] } = { live: '', records: [] };
    for (let i = 0; i < 600 && served.records.length < 2; i++, await sleep(100)) {
      served = (await (await fetch(page.replace('/runs/', '/api/runs/') + '/metrics')).json()) as typeof served;
    }
    expect(served.records.length, 'records the dashboard served while the run trained').toBeGreaterThanOrEqual(2);
    expect(served.live).toBe('redis');
    expect((await fetch(page)).status).toBe(200);
    const x = await run.done;
    expect(x.code, x.stderr).toBe(0);
    expect(x.stderr).toMatch(/dashboard stopped; reopen it on the run with: gsteer monitor \S+dsh --serve/);
    const recorded = readMetrics(join(t.dir, 'runs', 'dsh', 'metrics.jsonl'));
    expect(recorded.map((r) => r.step)).toEqual([1, 2, 3, 4]); // grpo.maxUpdates of e2eConfig
    expect(served.records).toEqual(recorded.slice(0, served.records.length));
    for (const r of recorded) {
      expect(r.trajectories).toBe(8); // 2 groups x 4
      for (const k of ['time/wait_rollouts_s', 'time/wait_trainer_s', 'trajectories_per_second']) expect(r[k], k).toBeGreaterThanOrEqual(0);
    }
  }, 120_000);
});
