// The dashboard over real HTTP on fixture run directories (real Redis, the test's own key
// prefix): its URLs, refused run names, Prometheus text, the queue board, and the token
// rules, in-process and through the CLI.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../monitor/dashboard/start.ts';
import { connect, deletePrefixedKeys } from '../../util/redis.ts';
import { queuePrefix } from '../../checkpoints/run-keys.ts';
import { cli, sleep, waitFor } from '../e2e/helpers.ts';
import { fixtureGroup, fixtureRun, tempRoot, testPrefix } from './dashboard-fixture.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A GET with the path exactly as given (no URL normalization, unlike fetch). */
function get(base: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const root = tempRoot('server');
const prefix = testPrefix('server');
const secret = `secret-${randomBytes(8).toString('hex')}`;
const a = fixtureRun(root, 'run-a', { steps: 5, prefix });
// A run whose Redis is unreachable (a finished run somewhere else), with a password in its URL.
const b = fixtureRun(root, 'run-b', { steps: 3, prefix: `${prefix}-b`, redisUrl: 'redis://:hunter2pass@127.0.0.1:1' });
writeFileSync(join(root, 'secret.txt'), secret);
let dash: Dashboard;

beforeAll(async () => {
  dash = await startDashboard({ runDirs: [a.dir, b.dir], port: 0, log: () => undefined });
});
afterAll(async () => {
  await dash?.close();
  await deletePrefixedKeys(prefix);
  rmSync(root, { recursive: true, force: true });
});

describe('dashboard URLs', () => {
  it('serves the runs, their metrics, files and pages, uPlot from node_modules', async () => {
    const runs = JSON.parse((await get(dash.url, '/api/runs')).body);
    expect(runs.runs.map((r: { name: string; updates: number }) => [r.name, r.updates])).toEqual([
      ['run-a', 5],
      ['run-b', 3],
    ]);
    expect(runs.runs[1].live).toBe('file');
    const m = JSON.parse((await get(dash.url, '/api/runs/run-a/metrics')).body);
    expect(m.records).toEqual(a.records);
    const page = await get(dash.url, '/runs/run-a');
    expect(page.status).toBe(200);
    expect(page.body).toContain('/static/run.js');
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/);
    const uplot = await get(dash.url, '/static/uPlot.esm.js');
    expect(uplot.body).toBe(readFileSync(join(import.meta.dirname, '../../node_modules/uplot/dist/uPlot.esm.js'), 'utf8'));
    expect(JSON.parse((await get(dash.url, '/api/runs/run-a/run.json')).body).runId).toBe('run-a');
    const cfg = await get(dash.url, '/api/runs/run-b/config.yaml');
    expect(cfg.body).toContain('redis://***@127.0.0.1:1');
    expect(cfg.body).not.toContain('hunter2pass');
  });

  it("gives the latest update's trajectories with their rewards and turns", async () => {
    const t = JSON.parse((await get(dash.url, '/api/runs/run-a/trajectories')).body);
    expect(t.step).toBe(5);
    const g = fixtureGroup(5);
    expect(t.groups[0].trajectories.map((x: { reward: number }) => x.reward)).toEqual(g.scores.map((s) => s.reward));
    expect(t.groups[0].trajectories.map((x: { best: boolean }) => x.best)).toEqual([false, false, false, true]);
    expect(t.groups[0].trajectories[1].turns.map((x: { action: string }) => x.action)).toEqual(['ASK', 'STOP']);
    // the LLM simulator's reply beside its answer (trajectories 1 and 2); none for the embedded one (0)
    expect(t.groups[0].trajectories.slice(0, 3).map((x: { turns: { simulatorReply?: string }[] }) => x.turns[0]!.simulatorReply)).toEqual([
      undefined,
      '{"target_id": "budget", "answer": "about 500 euros"}',
      '(no reply accepted: reply_error:truncated after 4 attempt(s); answered non-committally)',
    ]);
    expect(JSON.parse((await get(dash.url, '/api/runs/run-a/trajectories?step=2')).body).groups).toEqual([]); // not on disk
  });

  it('404s unknown runs and refuses .., %2f, absolute paths and NUL without reading a file', async () => {
    for (const path of ['/runs/nope', '/api/runs/nope/metrics', '/api/runs/nope/config.yaml', '/api/events?run=nope'])
      expect((await get(dash.url, path)).status, path).toBe(404);
    const refused = [
      '/runs/..',
      '/runs/%2e%2e',
      '/api/runs/..%2fsecret.txt/metrics',
      '/api/runs/%2E%2E%2F%2E%2E/config.yaml',
      '/api/runs/run-a%2f..%2f..%2fsecret.txt/run.json',
      '/api/runs/%2Fetc%2Fpasswd/config.yaml',
      '/runs/run-a%00',
      '/api/runs/run%00-a/metrics',
      '/api/events?run=..%2Fsecret.txt',
      '/api/runs/run-a/trajectories?step=..%2F..%2Fsecret',
      '/static/..%2F..%2Fsecret.txt',
      '/static/%2Fetc%2Fpasswd',
      '/../secret.txt',
      '/runs/../../secret.txt',
      '/runs//etc/passwd',
      '/api/runs/%E0%A4%A/metrics',
      '/static/constructor',
      '/runs/__proto__',
      '/api/runs/constructor/metrics',
    ];
    for (const path of refused) {
      const r = await get(dash.url, path);
      expect([400, 404], `${path} -> ${r.status}`).toContain(r.status);
      expect(r.body).not.toContain(secret);
      expect(r.body).not.toMatch(/root:.*:0:0/);
    }
    expect((await get(dash.url, '/runs/..')).status).toBe(400);
    expect((await get(dash.url, '/api/runs/%2Fetc%2Fpasswd/config.yaml')).status).toBe(400);
    expect((await get(dash.url, '/runs/run-a%00')).status).toBe(400);
  });

  it('answers only to a loopback Host when it has no token', async () => {
    expect((await get(dash.url, '/api/runs', { Host: 'attacker.example:6007' })).status).toBe(403);
    expect((await get(dash.url, '/api/runs', { Host: 'localhost:6007' })).status).toBe(200);
  });
});

describe('runs sharing a stream', () => {
  it('a copied run directory (same run id and prefix) and its original follow their files only', async () => {
    const copy = fixtureRun(root, 'run-a-copy', { steps: 2, prefix, runId: 'run-a' });
    const logs: string[] = [];
    const d = await startDashboard({ runDirs: [a.dir, copy.dir, b.dir], port: 0, log: (m) => logs.push(m) });
    const other = await startDashboard({ runDirs: [a.dir], port: 0, log: () => undefined });
    try {
      await waitFor(() => other.runs[0]!.live === 'redis', 10_000, 'the same run alone going live');
      expect(d.runs.map((r) => r.live)).toEqual(['file', 'file', 'file']);
      expect(logs).toEqual([
        `runs run-a, run-a-copy share the Redis stream ${prefix}:{run-a}:metrics (same run id and queue prefix); they follow their metrics.jsonl only`,
      ]);
    } finally {
      await other.close();
      await d.close();
    }
  });
});

describe('Prometheus /metrics and the queue board', () => {
  it('reports the latest update as gauges, counters from the records, queue depths', async () => {
    const redis = connect('redis://127.0.0.1:6379');
    const q = new Queue('rollouts', { connection: redis, prefix: queuePrefix(prefix, 'run-a') });
    await q.add('x', {}, { jobId: 'one' });
    await waitFor(() => dash.runs[0]!.live === 'redis', 10_000, 'run-a live on Redis');
    const text = (await get(dash.url, '/metrics')).body;
    await q.close();
    redis.disconnect();
    const value = (line: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${line} `))
          ?.slice(line.length + 1),
      );
    const last = a.records.at(-1)!;
    expect(value('gsteer_reward{run="run-a"}')).toBe(last.reward);
    expect(value('gsteer_rewards_r_align_mean{run="run-a"}')).toBe(last['rewards/r_align/mean']);
    expect(value('gsteer_time_wait_rollouts_s{run="run-a"}')).toBe(4);
    expect(value('gsteer_reward{run="run-b"}')).toBe(b.records.at(-1)!.reward);
    expect(value('gsteer_updates_total{run="run-a"}')).toBe(5);
    expect(value('gsteer_trajectories_total{run="run-a"}')).toBe(20); // 5 updates x 1 group x 4
    expect(value('gsteer_groups_dropped_total{run="run-a"}')).toBe(0);
    expect(value('gsteer_restarts_total{run="run-a"}')).toBe(0);
    expect(value(`gsteer_queue_jobs{prefix="${queuePrefix(prefix, 'run-a')}",queue="rollouts",state="waiting"}`)).toBe(1);
    expect(text).toMatch(/# TYPE gsteer_updates_total counter/);
    expect(text).not.toContain(`prefix="${queuePrefix(`${prefix}-b`, 'run-b')}"`); // its Redis does not answer: left out, not 0
  });

  it('mounts bull-board read-only by default', async () => {
    expect((await get(dash.url, '/queues/')).status).toBe(200);
    // The board lists the queues of a Redis once it answers (run-b's never does).
    let api = { queues: [] as { name: string; readOnlyMode: boolean }[] };
    for (let t = 0; t < 50 && api.queues.length === 0; t++, await sleep(100)) api = JSON.parse((await get(dash.url, '/queues/api/queues')).body);
    const qa = queuePrefix(prefix, 'run-a');
    expect(api.queues.map((x) => x.name).sort()).toEqual([`${qa}:groups`, `${qa}:rollouts`, `${qa}:updates`]);
    expect(api.queues.every((x) => x.readOnlyMode)).toBe(true);
  });
});

describe('an observer writes nothing to Redis', () => {
  it('serving a finished run whose keys are gone (its board and queue gauges read) leaves no key under its prefix', async () => {
    const c = fixtureRun(root, 'run-c', { steps: 2, prefix: `${prefix}-c` });
    const d = await startDashboard({ runDirs: [c.dir], port: 0, log: () => undefined });
    const redis = connect('redis://127.0.0.1:6379');
    try {
      let api = { queues: [] as { name: string }[] };
      for (let t = 0; t < 50 && api.queues.length === 0; t++, await sleep(100)) api = JSON.parse((await get(d.url, '/queues/api/queues')).body);
      expect(api.queues).toHaveLength(3); // its Redis answers: the board reads the three queues
      // the gauges read every queue's counts on the same connection, after anything a queue sent on connect
      expect((await get(d.url, '/metrics')).body).toContain(
        `gsteer_queue_jobs{prefix="${queuePrefix(`${prefix}-c`, 'run-c')}",queue="updates",state="waiting"} 0`,
      );
      expect(await redis.keys(`${prefix}-c:*`)).toEqual([]);
    } finally {
      await d.close();
      await deletePrefixedKeys(`${prefix}-c`);
      redis.disconnect();
    }
  });
});

describe('token', () => {
  const token = randomBytes(16).toString('hex');

  it('401s a missing or wrong token, 200s the right one (header, or ?token= once then a cookie)', async () => {
    const d = await startDashboard({ runDirs: [a.dir], port: 0, token, log: () => undefined });
    try {
      const wrong = `${token.slice(0, -1)}x`;
      expect((await get(d.url, '/api/runs')).status).toBe(401);
      const bad = await get(d.url, '/metrics', { Authorization: `Bearer ${wrong}` });
      expect(bad.status).toBe(401);
      expect(bad.body).not.toContain(wrong);
      expect((await get(d.url, `/runs/run-a?token=${wrong}`)).status).toBe(401);
      expect((await get(d.url, '/metrics', { Authorization: `Bearer ${token}` })).status).toBe(200);
      const login = await get(d.url, `/runs/run-a?overlay=x&token=${token}`);
      expect(login.status).toBe(303);
      expect(login.headers.location).toBe('/runs/run-a?overlay=x'); // the token leaves the URL
      const cookie = String(login.headers['set-cookie']).split(';')[0]!;
      expect(cookie).not.toContain(token);
      expect((await get(d.url, '/api/runs/run-a/metrics', { Cookie: cookie })).status).toBe(200);
      expect((await get(d.url, '/api/runs', { Cookie: 'gsteer_session=forged' })).status).toBe(401);
    } finally {
      await d.close();
    }
  });

  it('the CLI refuses --host 0.0.0.0 without a token (exit 2, the rule and the fix)', async () => {
    const x = await cli(['monitor', a.dir, '--serve', '--host', '0.0.0.0', '--port', '0'], { GSTEER_MONITOR_TOKEN: '' }).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toMatch(
      /--host 0\.0\.0\.0 .* without a token; the rule: any host other than 127\.0\.0\.1\/localhost needs --token T or GSTEER_MONITOR_TOKEN=T/,
    );
    expect(x.stderr).toMatch(/openssl rand -hex 32/);
  }, 30_000);

  it('the CLI on 0.0.0.0 with a token checks it and never prints it', async () => {
    const wrong = randomBytes(16).toString('hex');
    const run = cli(['monitor', a.dir, '--serve', '--host', '0.0.0.0', '--port', '0'], { GSTEER_MONITOR_TOKEN: token });
    let out = '';
    run.proc.stdout!.on('data', (d) => (out += d));
    await waitFor(() => /dashboard on (http:\S+)/.test(out), 20_000, 'the dashboard URL');
    const url = /dashboard on (http:\S+)/.exec(out)![1]!;
    expect((await get(url, '/api/runs', { Authorization: `Bearer ${wrong}` })).status).toBe(401);
    expect((await get(url, `/runs/run-a?token=${wrong}`)).status).toBe(401);
    expect((await get(url, '/api/runs', { Authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await get(url, `/runs/run-a?token=${token}`)).status).toBe(303);
    run.proc.kill('SIGINT');
    const x = await run.done;
    expect(x.code).toBe(0);
    expect(x.stdout + x.stderr).not.toContain(token);
    expect(x.stdout + x.stderr).not.toContain(wrong);
    expect(x.stdout).toMatch(/token required/);
  }, 30_000);
});
