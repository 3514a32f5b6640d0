// Make sure Redis answers on the configured URL. When none does and the URL is local and a
// `redis-server` binary is installed, start one (no persistence); otherwise say how to get
// Redis. A redis-server gsteer started is shared by every run that finds it answering, and
// stopped by the last of them to end, not by the one that started it: each run using it
// registers in its hash `gsteer-local-redis:runs` (field = pid@host, value = when its
// registration lapses, renewed every 10 s), and a run that ends with no other live
// registration shuts it down (SHUTDOWN NOSAVE). A run killed outright lapses in 30 s.
// A Redis gsteer did not start (no `gsteer-local-redis:started` key) is never stopped. A
// Redis Cluster URL is never started here: its operator starts it (tests/helpers/redis-cluster.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import { InputError } from '../util/errors.ts';
import { isClusterUrl, redisOptions, showUrl } from '../util/redis.ts';

const STARTED = 'gsteer-local-redis:started';
const RUNS = 'gsteer-local-redis:runs';
const LAPSE_MS = 30_000;
const RENEW_MS = 10_000;

export async function pingRedis(url: string, timeoutMs = 1500): Promise<boolean> {
  const u = new URL(url);
  const r = new Redis({
    host: u.hostname,
    port: Number(u.port || 6379),
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
  });
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
  if (isClusterUrl(url))
    return `no Redis Cluster node answers at ${showUrl(url)} (queues.redisUrl); start the cluster or point queues.redisUrl at one of its nodes`;
  const local = ['127.0.0.1', 'localhost', '::1'].includes(u.hostname);
  const installed = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  if (local && installed) return null;
  return (
    `no Redis answers at ${showUrl(url)} (queues.redisUrl); ` +
    (local
      ? 'install it (apt-get install redis-server, brew install redis, or docker run -p 6379:6379 redis) or point queues.redisUrl at a running Redis'
      : 'start it or point queues.redisUrl at a running Redis')
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

export interface LocalRedis {
  /** End this run's use: the last run using a redis-server gsteer started shuts it down. */
  stop(): Promise<void>;
}

/** One connection that gives up at once when Redis is gone (it may be shut down under it). */
const shortLived = (url: string) => {
  const r = new Redis({ ...redisOptions(url), maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  r.on('error', () => undefined);
  return r;
};

/** Register as a user of a gsteer-started Redis; null when gsteer did not start it. */
async function register(url: string, me: string, proc: ChildProcess | null): Promise<LocalRedis | null> {
  const r = shortLived(url);
  await r.connect();
  if (!proc && !(await r.exists(STARTED))) {
    r.disconnect();
    return null;
  }
  if (proc) await r.set(STARTED, JSON.stringify({ pid: proc.pid, host: hostname(), at: new Date().toISOString() }));
  await r.hset(RUNS, me, String(Date.now() + LAPSE_MS));
  const timer = setInterval(() => void r.hset(RUNS, me, String(Date.now() + LAPSE_MS)).catch(() => undefined), RENEW_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      try {
        await r.hdel(RUNS, me);
        const now = Date.now();
        const others = Object.values(await r.hgetall(RUNS)).filter((until) => Number(until) > now);
        if (others.length === 0) {
          await r.call('SHUTDOWN', 'NOSAVE').catch(() => undefined); // the connection drops: that is the answer
          if (proc) await stopProcess(proc);
        }
      } catch {
        // gone already (another run shut it down)
      } finally {
        r.disconnect();
      }
    },
  };
}

/** `runKey`: names this run among the Redis's users (defaults to pid@host). */
export async function ensureRedis(url: string, log: (m: string) => void, runKey = `${process.pid}@${hostname()}`): Promise<LocalRedis> {
  for (let attempt = 0; ; attempt++) {
    if (await pingRedis(url)) {
      // another run's gsteer-started Redis may shut down between the ping and the registration: start over then
      const shared = await register(url, runKey, null).catch(() => (attempt < 2 ? 'retry' : null));
      if (shared === 'retry') continue;
      return shared ?? { stop: async () => {} };
    }
    const problem = await redisProblem(url);
    if (problem) throw new InputError(problem);
    const u = new URL(url);
    const port = u.port || '6379';
    log(`no Redis at ${showUrl(url)}: starting redis-server on port ${port} (shared by the runs that use it; the last one to end stops it)`);
    // its own process group: a Ctrl-C meant for this run must not stop the Redis other runs use
    const proc: ChildProcess = spawn('redis-server', ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
      detached: true,
    });
    proc.unref();
    for (let i = 0; i < 50; i++) {
      if (await pingRedis(url, 500)) return (await register(url, runKey, proc)) as LocalRedis;
      await sleep(100);
    }
    proc.kill('SIGKILL');
    // another run started one on this port meanwhile: use that one
    if (attempt < 2 && (await pingRedis(url))) continue;
    throw new InputError(`started redis-server on port ${port} but it does not answer; check that the port is free`);
  }
}
