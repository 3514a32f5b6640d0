// A synthetic user-simulator endpoint over real HTTP for fleet simulations (bench/fleet/):
// POST /v1/chat/completions answers in OpenAI's shape after a latency drawn from a
// log-normal with the given median and 99th percentile (a Qwen3-32B endpoint's seconds and
// long tail); a share of calls stalls for stallMs (past the client's timeout, so the
// client gives up and retries) and a share is refused with 429 and a Retry-After. What it
// says is a placeholder, a function of the request's seed (so a retried call, or the same
// run on another Redis, reads the same words): the synthetic episode needs its tokens and its time.
// GET /stats reports the counts.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Rng } from '../../util/rng.ts';

export interface SimulatorTiming {
  medianMs: number;
  p99Ms: number;
  /** Share of calls that stall for stallMs before answering. */
  stallShare: number;
  stallMs: number;
  /** Share of calls refused with 429 Too Many Requests. */
  share429: number;
  retryAfterS: number;
}

export const DEFAULT_SIMULATOR: SimulatorTiming = { medianMs: 1500, p99Ms: 6000, stallShare: 0.005, stallMs: 30_000, share429: 0.01, retryAfterS: 1 };

export interface SimulatorStats {
  requests: number;
  answered: number;
  stalled: number;
  refused429: number;
  latencyMs: number; // sum over answered calls (stalls included)
}

export interface SimulatorServer {
  url: string;
  stats(): SimulatorStats;
  close(): Promise<void>;
}

const Z99 = 2.3263; // standard normal 99th percentile

/** One latency draw (ms): median * exp(sigma * z), sigma from the median and p99. */
export function drawLatency(t: SimulatorTiming, rng: Rng): number {
  const sigma = t.p99Ms > t.medianMs ? Math.log(t.p99Ms / t.medianMs) / Z99 : 0;
  return t.medianMs * Math.exp(sigma * rng.normal());
}

async function body(req: IncomingMessage): Promise<{ seed?: unknown }> {
  let s = '';
  for await (const chunk of req) s += chunk;
  try {
    return s ? (JSON.parse(s) as { seed?: unknown }) : {};
  } catch {
    return {};
  }
}

function send(res: ServerResponse, status: number, data: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return; // the client gave up (a stall past its timeout)
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(data));
}

export async function startSimulatorServer(t: SimulatorTiming, o: { port?: number; seed?: number } = {}): Promise<SimulatorServer> {
  const rng = new Rng(o.seed ?? 1);
  const stats: SimulatorStats = { requests: 0, answered: 0, stalled: 0, refused429: 0, latencyMs: 0 };
  const server = createServer((req, res) => {
    void (async () => {
      const b = await body(req);
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && path === '/stats') return send(res, 200, stats);
      if (req.method !== 'POST' || path !== '/v1/chat/completions') return send(res, 404, { error: { message: 'not found', code: 404 } });
      stats.requests++;
      const u = rng.next();
      if (u < t.share429) {
        stats.refused429++;
        return send(res, 429, { error: { message: 'Too many requests', type: 'rate_limit', code: 429 } }, { 'retry-after': String(t.retryAfterS) });
      }
      const stalled = u < t.share429 + t.stallShare;
      const ms = stalled ? t.stallMs : drawLatency(t, rng);
      if (stalled) stats.stalled++;
      await new Promise((r) => setTimeout(r, ms));
      stats.answered++;
      stats.latencyMs += ms;
      const content = `The answer is ${typeof b.seed === 'number' ? b.seed % 1_000_003 : 0}.`;
      send(res, 200, {
        id: `sim-${stats.requests}`,
        object: 'chat.completion',
        created: 0,
        model: 'simulator',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 0, completion_tokens: 8, total_tokens: 8 },
      });
    })();
  });
  // Keep-alive sockets of many callers: do not let the server's default timeouts cut them.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(o.port ?? 0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    stats: () => ({ ...stats }),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
