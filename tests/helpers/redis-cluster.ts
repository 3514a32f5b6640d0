// A real local Redis Cluster for tests and benches: N masters of Debian's redis-server
// (cluster-enabled, no persistence) on free ports in a temp dir, joined with
// `redis-cli --cluster create`, waited on until every node says cluster_state:ok, and
// stopped (every process, the temp dir) by stop(). Its URL is `redis://127.0.0.1:P?cluster=true`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface LocalCluster {
  url: string;
  ports: number[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether the OS lets us bind `port` on 127.0.0.1 now. */
const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A port the OS hands out whose cluster bus port (port + 10000) is free too. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    if (port + 10000 <= 65535 && !taken.has(port) && !taken.has(port + 10000) && (await bindable(port + 10000))) return port;
  }
  throw new Error('no free port pair (port, port + 10000) for a Redis Cluster node after 100 tries');
}

async function ask(port: number, ...args: string[]): Promise<string> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return String(await r.call(args[0] as string, ...args.slice(1)));
  } finally {
    r.disconnect();
  }
}

async function until(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await ok().catch(() => false))) {
    if (Date.now() - t0 > ms) throw new Error(`local Redis Cluster: ${what} within ${ms} ms`);
    await sleep(100);
  }
}

export async function startRedisCluster(masters = 3): Promise<LocalCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'gsteer-redis-cluster-'));
  const procs: ChildProcess[] = [];
  const ports: number[] = [];
  const taken = new Set<number>();
  const stop = async () => {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            const force = setTimeout(() => p.kill('SIGKILL'), 5000);
            p.once('exit', () => (clearTimeout(force), resolve()));
            p.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freeClusterPort(taken);
      taken.add(port).add(port + 10000);
      ports.push(port);
      procs.push(
        spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--dir',
            dir,
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            '5000',
            '--save',
            '',
            '--appendonly',
            'no',
          ],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const p of ports) await until(`node ${p} did not answer PING`, 10_000, async () => (await ask(p, 'PING')) === 'PONG');
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed (exit ${create.status}): ${create.stdout}${create.stderr}`);
    for (const p of ports)
      await until(`node ${p} did not reach cluster_state:ok`, 30_000, async () => (await ask(p, 'CLUSTER', 'INFO')).includes('cluster_state:ok'));
    return { url: `redis://127.0.0.1:${ports[0]}?cluster=true`, ports, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
