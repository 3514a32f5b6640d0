// E2E: secrets stay secret (issue 32 item 3). Keys planted in a config's URL (a Redis
// password: a private redis-server with requirepass), in a query string and in headers (the
// QREF search API section), and in the environment (apiKeyEnv variables; the random key
// `gsteer train` gives its embedded policy server, read from the run's /proc environ) appear
// in no file of the run directory, no dashboard response, no `config show` output and no log
// line or terminal output; run files are 0600 and folders 0700. A key written out in a config
// prints as *** in `config show` and makes `train` refuse, naming the field, not the key.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard } from '../../monitor/dashboard/start.ts';
import { pingRedis } from '../../workers/redis-local.ts';
import { cli, e2eConfig, metricLines, removeRuns, tempRun, waitFor, writeConfig } from './helpers.ts';

const t = tempRun('secrets');
const planted = {
  GSTEER_TEST_REDIS_PW: `redispw-${randomBytes(8).toString('hex')}`,
  GSTEER_TEST_SEARCH_KEY: `searchkey-${randomBytes(8).toString('hex')}`,
  GSTEER_TEST_HEADER_TOKEN: `headertok-${randomBytes(8).toString('hex')}`,
  GSTEER_SIMULATOR_API_KEY: `simkey-${randomBytes(8).toString('hex')}`,
  GSTEER_MONITOR_TOKEN: `montok-${randomBytes(12).toString('hex')}`,
};
let port = 0;
let redis: ChildProcess | null = null;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

beforeAll(async () => {
  port = await freePort();
  redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', planted.GSTEER_TEST_REDIS_PW],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100 && !(await pingRedis(`redis://:${planted.GSTEER_TEST_REDIS_PW}@127.0.0.1:${port}`, 500)); i++)
    await new Promise((r) => setTimeout(r, 100));
});
afterAll(async () => {
  redis?.kill('SIGTERM');
  await removeRuns(t);
});

const config = (over: Record<string, unknown> = {}) =>
  e2eConfig(t, 'sec', {
    grpo: { maxUpdates: 2, groupsPerUpdate: 1 },
    queues: { prefix: t.prefix, redisUrl: `redis://:\${GSTEER_TEST_REDIS_PW}@127.0.0.1:${port}` },
    qref: {
      search: {
        kind: 'http',
        http: {
          url: 'https://search.example/api?api_key=${GSTEER_TEST_SEARCH_KEY}&q0=1',
          headers: { Authorization: 'Bearer ${GSTEER_TEST_HEADER_TOKEN}' },
          results: 'organic',
          id: 'link',
          text: 'snippet',
        },
      },
    },
    ...over,
  });

/** Every file under `dir` with its bytes (binary files too: a key could hide in an adapter). */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [{ path: join(dir, e.name), bytes: readFileSync(join(dir, e.name)) }],
  );
}
const leaks = (text: string | Buffer, keys: string[]) => keys.filter((k) => text.includes(k));

describe('e2e: secrets stay secret', () => {
  it('no planted key in any run file, log, output, dashboard answer or config show; files 0600, folders 0700', async () => {
    const file = writeConfig(t.dir, config());
    const run = cli(['train', '--config', file], { ...planted, GSTEER_SYNTHETIC_TRAIN_MS: '300' });
    const runDir = join(t.dir, 'runs', 'sec');
    await waitFor(() => metricLines(runDir) >= 1, 90_000, 'the first update');
    // the embedded policy server's key, from the environment of the run's children (Linux /proc)
    const children = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(run.proc.pid);
        } catch {
          return false;
        }
      });
    const environ = children.flatMap((d) => readFileSync(`/proc/${d}/environ`, 'utf8').split('\0'));
    const policyKey = environ.find((l) => l.startsWith('GSTEER_POLICY_API_KEY='))?.slice('GSTEER_POLICY_API_KEY='.length) ?? '';
    expect(policyKey).toMatch(/^[0-9a-f]{48}$/);
    const x = await run.done;
    expect(x.code, x.stderr).toBe(0);
    const keys = [...Object.values(planted), policyKey];

    expect(leaks(x.stdout + x.stderr, keys)).toEqual([]);
    const files = filesUnder(runDir);
    expect(files.length).toBeGreaterThan(20); // config, run.json, metrics, logs, groups, trajectories, adapters, checkpoints
    expect(files.filter((f) => leaks(f.bytes, keys).length).map((f) => f.path)).toEqual([]);
    const cfgText = readFileSync(join(runDir, 'config.yaml'), 'utf8');
    expect(cfgText).toContain('redis://:${GSTEER_TEST_REDIS_PW}@127.0.0.1'); // the reference, for resume and the workers
    expect(cfgText).toContain('Bearer ${GSTEER_TEST_HEADER_TOKEN}');
    // owner-only: files 0600, folders 0700
    const modes = new Set<string>();
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        modes.add(`${e.isDirectory() ? 'd' : 'f'}${(statSync(p).mode & 0o777).toString(8)}`);
        if (e.isDirectory()) walk(p);
      }
    };
    walk(runDir);
    expect([...modes].sort()).toEqual(['d700', 'f600']);

    // the dashboard, in this process with the keys in its environment (as train --dashboard has them)
    Object.assign(process.env, planted);
    const dash = await startDashboard({ runDirs: [runDir], port: 0, token: planted.GSTEER_MONITOR_TOKEN, log: () => undefined });
    try {
      const auth = { authorization: `Bearer ${planted.GSTEER_MONITOR_TOKEN}` };
      const bodies: string[] = [];
      for (const path of [
        '/api/runs',
        '/api/runs/sec/metrics',
        '/api/runs/sec/config.yaml',
        '/api/runs/sec/run.json',
        '/api/runs/sec/trajectories',
        '/api/runs/sec/trajectories?step=1',
        '/api/charts?run=sec',
        '/metrics',
        '/runs/sec',
        '/queues/api/queues',
      ]) {
        const res = await fetch(new URL(path, dash.url), { headers: auth });
        expect(res.status, path).toBeLessThan(500);
        bodies.push(`${path}\n${[...res.headers].join('\n')}\n${await res.text()}`);
      }
      const sse = await fetch(new URL('/api/events?run=sec', dash.url), { headers: auth });
      const reader = sse.body!.getReader();
      bodies.push(new TextDecoder().decode((await reader.read()).value));
      await reader.cancel();
      expect(bodies.filter((b) => leaks(b, keys).length).map((b) => b.split('\n')[0])).toEqual([]);
      expect(bodies.join('\n')).toContain('Bearer ${GSTEER_TEST_HEADER_TOKEN}');
    } finally {
      await dash.close();
      for (const k of Object.keys(planted)) delete process.env[k];
    }

    // config show: references as written
    const shown = await cli(['config', 'show', '--config', file], planted).done;
    expect(shown.code, shown.stderr).toBe(0);
    expect(leaks(shown.stdout + shown.stderr, keys)).toEqual([]);
    expect(shown.stdout).toContain('api_key=${GSTEER_TEST_SEARCH_KEY}');
  }, 180_000);

  it('a key written out in a config: config show prints ***, train refuses naming the field and not the key', async () => {
    const literal = `literal-${randomBytes(8).toString('hex')}`;
    const file = writeConfig(
      t.dir,
      config({
        runName: 'lit',
        qref: {
          search: {
            kind: 'http',
            http: { url: `https://search.example/api?token=${literal}`, headers: { 'X-API-Key': literal }, results: 'organic', id: 'link', text: 'snippet' },
          },
        },
      }),
    );
    const shown = await cli(['config', 'show', '--config', file], planted).done;
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain(literal);
    expect(shown.stdout).toContain('token=***');
    expect(shown.stdout).toMatch(/X-API-Key: "?\*\*\*"?/);
    const train = await cli(['train', '--config', file], planted).done;
    expect(train.code).toBe(2);
    expect(train.stderr).toContain('qref.search.http.url: holds a secret written out, which would reach RUN/config.yaml; write it as ${VAR} and export VAR');
    expect(train.stderr).toContain('qref.search.http.headers.X-API-Key: holds a secret written out');
    expect(train.stdout + train.stderr).not.toContain(literal);
  }, 60_000);
});
