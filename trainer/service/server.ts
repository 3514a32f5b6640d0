// `startTrainerService`: gsteer's Tinker-API server in-process (for `gsteer trainer serve`,
// gsteer's own runs and tests): listens, sweeps sessions whose heartbeats stopped, and closes
// gracefully (long polls answered, in-flight calls finished, engines and sampler freed).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InputError } from '../../util/errors.ts';
import { zstdReady } from '../tinker/zstd.ts';
import { httpHandler } from './http.ts';
import { ServiceState } from './state.ts';
import type { ServiceOptions } from './types.ts';

export interface RunningService {
  /** Base URL without /api/v1, e.g. http://127.0.0.1:41234 */
  url: string;
  state: ServiceState;
  close(): Promise<void>;
}

export async function startTrainerService(opts: ServiceOptions): Promise<RunningService> {
  await zstdReady();
  const state = new ServiceState(opts);
  const server = createServer(httpHandler(state));
  server.keepAliveTimeout = 30_000; // as gsteer serve's server: longer than clients' idle reuse
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE' ? new InputError(`port ${opts.port} on ${opts.host ?? '127.0.0.1'} is in use; pick another --port (0 = any free port)`) : e,
      ),
    );
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const timeout = opts.sessionTimeoutMs ?? 10 * 60_000;
  // The engine computes on this thread: heartbeats that arrived during a long call are still
  // queued when the timer fires late, so a late tick sweeps nothing (it would end live sessions).
  const period = Math.min(30_000, timeout);
  let lastTick = Date.now();
  const sweeper =
    timeout > 0
      ? setInterval(() => {
          const now = Date.now();
          const late = now - lastTick > 2 * period;
          lastTick = now;
          if (!late) state.sweep(timeout, opts.log);
        }, period)
      : null;
  sweeper?.unref();
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}`,
    state,
    close: () =>
      (closing ??= (async () => {
        if (sweeper) clearInterval(sweeper);
        const stopped = new Promise<void>((r) => server.close(() => r()));
        state.futures.close();
        const sweep = setInterval(() => server.closeIdleConnections(), 25);
        await stopped;
        clearInterval(sweep);
        await state.futures.drain(10_000); // calls already running finish before their engines are freed (one waiting on a seq_id gap is dropped)
        state.close();
        await opts.sampler?.close();
      })()),
  };
}
