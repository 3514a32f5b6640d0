// A resumed run's curves stay continuous. The run's first life records updates 1-6 (file
// and Redis stream) and checkpoints at 4; the resume cuts metrics.jsonl back to the
// checkpoint's 4 lines (truncateLines, as checkpoints/restore.ts does) and runs 5-8 again,
// recording them through the same sink. The stream now holds 5 and 6 twice. A dashboard
// watching through it, its server-sent events applied as the page applies them, and a
// dashboard opened afterwards all show updates 1-8 once each, with the re-run's values,
// and /metrics counts 8 updates (not 10), their trajectories, and both lives' restarts.
import { appendFileSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runLayout } from '../../checkpoints/layout.ts';
import { startDashboard } from '../../monitor/dashboard/start.ts';
import { metricsSink, readMetrics, type MetricsRecord } from '../../monitor/sink.ts';
import { truncateLines } from '../../util/jsonl.ts';
import { RESTART_MARK } from '../../checkpoints/layout.ts';
import { connect, deletePrefixedKeys } from '../../util/redis.ts';
import { metricsStreamKey } from '../../checkpoints/run-keys.ts';
import { sleep, waitFor } from '../e2e/helpers.ts';
import { fixtureRecord, fixtureRun, tempRoot, testPrefix } from './dashboard-fixture.ts';

const root = tempRoot('resume');
const prefix = testPrefix('resume');
afterAll(async () => {
  await deletePrefixedKeys(prefix);
  rmSync(root, { recursive: true, force: true });
});

/** The page's view of one run from /api/events: `reset` replaces the records, `update` appends one. */
async function watchEvents(url: string, run: string, view: { records: MetricsRecord[] }, signal: AbortSignal): Promise<void> {
  const res = await fetch(`${url}api/events?run=${run}`, { signal });
  const reader = res.body!.getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
    if (done) return;
    buf += new TextDecoder().decode(value);
    let end: number;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (event === 'reset') view.records = JSON.parse(data!).records;
      if (event === 'update') view.records.push(JSON.parse(data!).record);
    }
  }
}

const sample = (text: string, name: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${name}{run="res"} `))
      ?.split(' ')[1],
  );

describe('dashboard on a resumed run', () => {
  it('shows one point per update, none lost or doubled, in the API, the events and /metrics', async () => {
    const run = fixtureRun(root, 'res', { steps: 0, prefix, records: [] });
    const layout = runLayout(run.dir);
    const redis = connect('redis://127.0.0.1:6379');
    const key = metricsStreamKey(prefix, 'res');
    const first = metricsSink(layout.metrics, redis, key);
    for (let s = 1; s <= 6; s++) await first.write(fixtureRecord(s, 0));
    appendFileSync(layout.log('rollout-0'), `[t] ${RESTART_MARK} 1/3 of rollout-0 (signal SIGKILL)\n`);

    const dash = await startDashboard({ runDirs: [run.dir], port: 0, log: () => undefined });
    const stop = new AbortController();
    const view = { records: [] as MetricsRecord[] };
    const watching = watchEvents(dash.url, 'res', view, stop.signal);
    try {
      await waitFor(() => dash.runs[0]!.live === 'redis' && view.records.length === 6, 10_000, 'the first life on the page');
      // The resume: back to the checkpoint at 4, then updates 5-8 again (another epoch: other numbers).
      truncateLines(layout.metrics, 4);
      const second = metricsSink(layout.metrics, redis, key);
      for (let s = 5; s <= 8; s++) {
        await second.write(fixtureRecord(s, 1, -35));
        await sleep(50);
      }
      appendFileSync(layout.log('trainer-0'), `[t] ${RESTART_MARK} 1/3 of trainer-0 (exit code 1)\n`);
      const expected = readMetrics(layout.metrics);
      expect(expected.map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(await redis.xlen(key)).toBe(10); // 5 and 6 are in the stream twice
      await waitFor(() => view.records.length === 8 && view.records.at(-1)?.step === 8, 10_000, 'the resumed updates on the page');
      expect(view.records).toEqual(expected);

      const later = await startDashboard({ runDirs: [run.dir], port: 0, log: () => undefined });
      try {
        for (const d of [dash, later]) {
          const api = (await (await fetch(`${d.url}api/runs/res/metrics`)).json()) as { records: MetricsRecord[] };
          expect(api.records).toEqual(expected);
          const text = await (await fetch(`${d.url}metrics`)).text();
          expect(sample(text, 'gsteer_updates_total')).toBe(8);
          expect(sample(text, 'gsteer_trajectories_total')).toBe(32); // 8 updates x 4, the thrown-away 5 and 6 not counted
          expect(sample(text, 'gsteer_restarts_total')).toBe(2); // one in each life
          expect(sample(text, 'gsteer_step')).toBe(8);
          expect(sample(text, 'gsteer_reward')).toBe(expected.at(-1)!.reward);
        }
      } finally {
        await later.close();
      }
    } finally {
      stop.abort();
      await watching;
      await dash.close();
      redis.disconnect();
    }
  }, 30_000);
});
