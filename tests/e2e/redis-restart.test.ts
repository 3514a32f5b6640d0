// E2E (real processes, synthetic parts, the test's OWN redis-servers on free ports — the
// shared one is never touched): Redis killed and restarted mid-run.
//  - with persistence (AOF): the workers and the controller reconnect and the run completes;
//  - without persistence (the queues come back empty): the run stops cleanly with a
//    checkpoint and exit 1 naming the cause, and `gsteer resume` completes it — no update
//    is lost silently in either case.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pingRedis } from '../../workers/redis-local.ts';
import { cli, e2eConfig, metricLines, reproducibleMetrics, sleep, tempRun, waitFor, writeConfig } from './helpers.ts';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

const procs: ChildProcess[] = [];
const dirs: string[] = [];

async function startRedis(port: number, dir: string, persist: boolean): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--appendonly', persist ? 'yes' : 'no', '--appendfsync', 'always'];
  const p = spawn('redis-server', args, { stdio: 'ignore' });
  procs.push(p);
  for (let i = 0; i < 50 && !(await pingRedis(`redis://127.0.0.1:${port}`, 300)); i++) await sleep(100);
  return p;
}

afterAll(() => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const env = { GSTEER_SYNTHETIC_LATENCY_MS: '400', GSTEER_SYNTHETIC_TRAIN_MS: '400' };

async function scenario(persist: boolean) {
  const t = tempRun(persist ? 'redis-aof' : 'redis-mem');
  const redisDir = mkdtempSync(join(tmpdir(), 'gsteer-redis-'));
  dirs.push(t.dir, redisDir);
  const port = await freePort();
  let redis = await startRedis(port, redisDir, persist);
  const cfg = e2eConfig(t, 'rr', {
    grpo: { maxUpdates: 4, learningRate: 0.1, groupsPerUpdate: 1 },
    checkpoint: { every: 1, keep: 2 },
    queues: { prefix: 'gsteer-test:e2e-redis', redisUrl: `redis://127.0.0.1:${port}`, rolloutLockMs: 3000, trainerLockMs: 3000, backoffMs: 200 },
  });
  const runDir = join(t.dir, 'runs', 'rr');
  const run = cli(['train', '--config', writeConfig(t.dir, cfg)], env);
  await waitFor(() => metricLines(runDir) >= 1, 60_000, 'update 1');
  redis.kill('SIGKILL');
  await new Promise((r) => redis.once('exit', r));
  await sleep(800);
  redis = await startRedis(port, redisDir, persist);
  const x = await run.done;
  return { x, runDir, stop: () => redis.kill('SIGKILL') };
}

describe('e2e: Redis restarted mid-run', () => {
  it('with persistence the run reconnects and completes; without, it stops with a checkpoint and resumes', async () => {
    const [aof, mem] = await Promise.all([scenario(true), scenario(false)]);
    expect(aof.x.code, aof.x.stderr).toBe(0);
    expect(reproducibleMetrics(aof.runDir).map((m) => m.step)).toEqual([1, 2, 3, 4]);

    expect(mem.x.code).toBe(1);
    expect(mem.x.stderr).toMatch(/Redis no longer holds the .* \(was it restarted without persistence\?\); the run stopped at update \d with a checkpoint/);
    const stoppedAt = reproducibleMetrics(mem.runDir).length;
    expect(stoppedAt).toBeGreaterThanOrEqual(1);
    const resumed = await cli(['resume', mem.runDir], env).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(new RegExp(`from checkpoint step ${stoppedAt}`));
    expect(reproducibleMetrics(mem.runDir).map((m) => m.step)).toEqual([1, 2, 3, 4]);
    aof.stop();
    mem.stop();
  }, 120_000);
});
