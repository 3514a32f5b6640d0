// Make sure Redis answers on the configured URL. When none does and the URL is local and a
// `redis-server` binary is installed, start one for this run (no persistence, stopped at the
// end); otherwise (or for a Redis Cluster URL) say how to get Redis.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { InputError } from '../util/errors.ts';
import { isClusterUrl, showUrl } from '../util/redis.ts';

export async function pingRedis(url: string, timeoutMs = 1500): Promise<boolean> {
  const u = new URL(url);
  const r = new Redis({ host: u.hostname, port: Number(u.port || 6379), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs, ...(u.password ? { password: decodeURIComponent(u.password) } : {}) });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Why `ensureRedis` would fail for this URL (checked before a run directory is created), or null. */
export async function redisProblem(url: string): Promise<string | null> {
  if (await pingRedis(url)) return null;
  const u = new URL(url);
  // A cluster is started by its operator (tests/helpers/redis-cluster.ts starts a local one).
  if (isClusterUrl(url)) return `no Redis Cluster node answers at ${showUrl(url)} (queues.redisUrl); start the cluster or point queues.redisUrl at one of its nodes`;
  const local = ['127.0.0.1', 'localhost', '::1'].includes(u.hostname);
  const installed = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  if (local && installed) return null;
  return (
    `no Redis answers at ${showUrl(url)} (queues.redisUrl); ` +
    (local ? 'install it (apt-get install redis-server, brew install redis, or docker run -p 6379:6379 redis) or point queues.redisUrl at a running Redis' : 'start it or point queues.redisUrl at a running Redis')
  );
}

/** SIGTERM, then wait until it has exited (SIGKILL after 5 s), so the port is free when stop() resolves. */
function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

export async function ensureRedis(url: string, log: (m: string) => void): Promise<{ stop(): Promise<void> }> {
  if (await pingRedis(url)) return { stop: async () => {} };
  const problem = await redisProblem(url);
  if (problem) throw new InputError(problem);
  const u = new URL(url);
  const port = u.port || '6379';
  log(`no Redis at ${showUrl(url)}: starting redis-server on port ${port} for this run`);
  const proc: ChildProcess = spawn('redis-server', ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    if (await pingRedis(url, 500)) return { stop: () => stopProcess(proc) };
    await sleep(100);
  }
  proc.kill('SIGKILL');
  throw new InputError(`started redis-server on port ${port} but it does not answer; check that the port is free`);
}
