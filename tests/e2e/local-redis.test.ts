// E2E: `gsteer train` starts its own redis-server when nothing answers on a local
// queues.redisUrl (and the last run using it stops it at the end, whichever started it);
// for a remote URL with no Redis it says how to get one, before creating anything. Uses
// free ports: the shared Redis is not involved.
import { existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pingRedis } from '../../workers/redis-local.ts';
import { cli, e2eConfig, metricLines, reproducibleMetrics, tempRun, waitFor, writeConfig } from './helpers.ts';

const t = tempRun('local-redis');
afterAll(() => rmSync(t.dir, { recursive: true, force: true }));

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

describe('e2e: Redis for the run', () => {
  it('starts a local redis-server when none answers, and stops it afterwards', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const cfg = e2eConfig(t, 'lr', { grpo: { maxUpdates: 1, groupsPerUpdate: 1 }, queues: { prefix: 'gsteer-test:e2e-local', redisUrl: url } });
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)]).done;
    expect(x.code, x.stderr).toBe(0);
    expect(x.stderr).toContain(`starting redis-server on port ${port} (shared by the runs that use it; the last one to end stops it)`);
    expect(reproducibleMetrics(join(t.dir, 'runs', 'lr')).map((m) => m.step)).toEqual([1]);
    expect(await pingRedis(url, 500)).toBe(false);
  }, 60_000);

  it('a redis-server gsteer started is stopped by the last run using it, not by the one that started it', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const cfg = (name: string, updates: number) =>
      e2eConfig(t, name, { grpo: { maxUpdates: updates, groupsPerUpdate: 1 }, queues: { prefix: 'gsteer-test:e2e-local2', redisUrl: url } });
    const first = cli(['train', '--config', writeConfig(t.dir, cfg('starter', 2))]); // starts it, ends first
    await waitFor(() => metricLines(join(t.dir, 'runs', 'starter')) >= 1, 60_000, 'the starter run past its first update');
    // the starter held (SIGSTOP) until the second run uses its Redis: no race on who is first
    process.kill(first.proc.pid!, 'SIGSTOP');
    const second = cli(['train', '--config', writeConfig(t.dir, cfg('user', 6))], { GSTEER_SYNTHETIC_TRAIN_MS: '500' });
    try {
      await waitFor(() => metricLines(join(t.dir, 'runs', 'user')) >= 1, 60_000, 'the second run past its first update');
    } finally {
      process.kill(first.proc.pid!, 'SIGCONT');
    }
    const x1 = await first.done;
    expect(x1.code, x1.stderr).toBe(0);
    expect(x1.stderr).toContain(`starting redis-server on port ${port}`);
    expect(await pingRedis(url, 500)).toBe(true); // the second run still uses it
    const x2 = await second.done;
    expect(x2.code, x2.stderr).toBe(0);
    expect(x2.stderr).not.toContain('starting redis-server');
    expect(reproducibleMetrics(join(t.dir, 'runs', 'user')).map((m) => m.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await pingRedis(url, 500)).toBe(false); // the last one stopped it
  }, 120_000);

  it('a remote Redis that does not answer: says how to get one, creates nothing', async () => {
    const cfg = e2eConfig(t, 'remote', { queues: { prefix: 'x', redisUrl: 'redis://192.0.2.1:6379' } }); // TEST-NET: never answers
    const x = await cli(['train', '--config', writeConfig(t.dir, cfg)]).done;
    expect(x.code).toBe(2);
    expect(x.stderr).toMatch(/no Redis answers at redis:\/\/192\.0\.2\.1:6379.*start it or point queues\.redisUrl at a running Redis/);
    expect(existsSync(join(t.dir, 'runs', 'remote'))).toBe(false);
  }, 30_000);
});
