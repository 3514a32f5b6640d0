// Start the dashboard on some run directories: check the bind rule, load the runs, listen,
// and return the URL and a close(). Used by `gsteer monitor --serve` and `gsteer train
// --dashboard` (in the training process: see cli/commands/train.ts).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InputError } from '../../util/errors.ts';
import { checkBind } from './auth.ts';
import { PrometheusMetrics } from './prometheus.ts';
import { RunQueues } from './queues.ts';
import { createApp } from './server.ts';
import { ServedRun } from './served-run.ts';

export const DEFAULT_PORT = 6007; // next to TensorBoard's 6006

export interface DashboardOptions {
  runDirs: string[];
  host?: string; // default 127.0.0.1
  port?: number; // default DEFAULT_PORT; 0 picks a free one
  token?: string | null;
  allowRetries?: boolean;
  log?: (msg: string) => void;
}

export interface Dashboard {
  url: string; // without the token
  runs: ServedRun[];
  close(): Promise<void>;
}

export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const host = o.host ?? '127.0.0.1';
  const token = o.token ?? null;
  const log = o.log ?? ((m: string) => console.error(m));
  checkBind(host, token);
  if (o.runDirs.length === 0) throw new InputError('no RUN_DIR given: name one or more run directories to serve');
  const runs = o.runDirs.map((dir) => new ServedRun(dir, log));
  const dup = runs.find((r, i) => runs.findIndex((s) => s.name === r.name) !== i);
  if (dup)
    throw new InputError(
      `two run directories are named ${dup.name} (${runs
        .filter((r) => r.name === dup.name)
        .map((r) => r.layout.root)
        .join(', ')}); run names must differ: serve them one at a time or rename one`,
    );
  const queues = new RunQueues(runs);
  const app = createApp({ runs, queues, prometheus: new PrometheusMetrics(runs, queues), token, allowRetries: o.allowRetries ?? false, log });
  // Runs with one stream (the same run id and prefix: a copied run directory) cannot tell
  // whose updates it carries: those follow their metrics.jsonl only.
  const streamOf = (r: ServedRun) => `${r.cfg.queues.redisUrl} ${r.streamKey}`;
  for (const r of runs) {
    const shared = runs.filter((s) => streamOf(s) === streamOf(r));
    if (shared.length > 1 && shared[0] === r)
      log(
        `runs ${shared.map((s) => s.name).join(', ')} share the Redis stream ${r.streamKey} (same run id and queue prefix); they follow their metrics.jsonl only`,
      );
    r.start(shared.length === 1);
  }
  const close = async () => {
    for (const r of runs) await r.close();
    await queues.close();
  };
  let server: Server;
  try {
    server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(o.port ?? DEFAULT_PORT, host, (err?: Error) => (err ? reject(err) : resolve(s)));
    });
  } catch (e) {
    await close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new InputError(`port ${o.port ?? DEFAULT_PORT} on ${host} is in use; pick another with --port (0 picks a free one)`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      throw new InputError(`--host ${host} is not an address of this machine; use 127.0.0.1 or one of its interfaces`);
    throw e;
  }
  const { port } = server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown === '0.0.0.0' ? '127.0.0.1' : shown}:${port}/`,
    runs,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await close();
    },
  };
}
