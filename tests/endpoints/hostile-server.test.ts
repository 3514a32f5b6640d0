// Endpoints that cannot hang a run (issue 32 item 2), against a real local HTTP server that
// misbehaves after the headers: a body that stalls, a connection reset mid-body, a 64 MiB
// body, and Retry-After values that are negative, a past date, zero, huge or garbage. Each is
// a bounded failure or retry: a status per attempt in the call records (timeout, connection,
// too_large, http_429), the waits recorded by an injected sleep (never slept), and a final
// TransientError after maxRetries. The stall needs a real timer (the deadline) of 300 ms.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { TransientError } from '../../util/errors.ts';
import { waitForPolicyServer } from '../../workers/policy-admin.ts';
import { options, recordingDeps, statuses } from './helpers.ts';

const OK = JSON.stringify({
  id: 'x',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }],
});
const MIB = 2 ** 20;

/** One behaviour per path segment: /stall, /reset, /huge, /retry-after/<value>; each counts its requests. */
const hits: Record<string, number> = {};
let hugeBytesSent = 0;
function handle(req: IncomingMessage, res: ServerResponse): void {
  const kind = (req.url ?? '').split('/')[1] ?? '';
  hits[kind] = (hits[kind] ?? 0) + 1;
  req.resume();
  if (kind === 'stall') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(OK.slice(0, 20)); // and never the rest
  } else if (kind === 'reset') {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(OK.length) });
    res.write(OK.slice(0, 20));
    setTimeout(() => req.socket.destroy(), 20);
  } else if (kind === 'huge') {
    res.writeHead(200, { 'content-type': 'application/json' }); // no content-length: the cap must count bytes
    const chunk = Buffer.alloc(MIB, 0x20);
    let sent = 0;
    const more = () => {
      while (sent < 64 && !res.destroyed) {
        sent++;
        hugeBytesSent += MIB;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
    };
    res.on('close', () => (sent = 64));
    more();
  } else if (kind === 'echo-key') {
    // a server that quotes the key it was sent in its error, as some APIs do
    res.writeHead(500, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        error: { message: `invalid key ${req.headers.authorization}; see https://user:${String(req.headers.authorization).slice(7)}@x.example/` },
      }),
    );
  } else if (kind === 'retry-after') {
    const value = decodeURIComponent((req.url ?? '').split('/')[2] ?? '');
    if (hits[`ra:${value}`]) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(OK);
    } else {
      hits[`ra:${value}`] = 1;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': value }).end('{"error":{"message":"slow down"}}');
    }
  } else res.writeHead(404).end();
}

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
const ask = { messages: [{ role: 'user' as const, content: 'Do you prefer trains?' }] };

describe('an endpoint that misbehaves after its headers', () => {
  it('a body that stalls: the deadline covers it; each attempt recorded as timeout, then TransientError', async () => {
    const deps = recordingDeps();
    const call = createEndpoint(options(`${base}/stall/v1`, { timeoutMs: 300, maxRetries: 2 }), deps).chat(ask);
    await expect(call).rejects.toThrow(TransientError);
    await expect(call).rejects.toThrow(/failed after 3 attempt\(s\), last timeout: no complete reply within 300 ms/);
    expect(hits.stall).toBe(3);
    expect(statuses(deps.records)).toEqual(['timeout', 'timeout', 'timeout']);
    expect(deps.sleeps).toEqual([500, 1000]);
  });

  it('a reset mid-body is retried like any transient failure (maxRetries + 1 attempts)', async () => {
    const deps = recordingDeps();
    const call = createEndpoint(options(`${base}/reset/v1`, { maxRetries: 3 }), deps).chat(ask);
    await expect(call).rejects.toThrow(/failed after 4 attempt\(s\), last connection: the connection broke mid-body after 20 bytes/);
    expect(hits.reset).toBe(4);
    expect(statuses(deps.records)).toEqual(['connection', 'connection', 'connection', 'connection']);
  });

  it('a 64 MiB body is cut off at the cap: a failed attempt (too_large), read no further', async () => {
    const deps = recordingDeps();
    const call = createEndpoint(options(`${base}/huge/v1`, { maxResponseMb: 1, maxRetries: 1 }), deps).chat(ask);
    await expect(call).rejects.toThrow(/last too_large: the response is larger than the cap of 1048576 bytes/);
    expect(hits.huge).toBe(2);
    expect(statuses(deps.records)).toEqual(['too_large', 'too_large']);
    // the server stops writing once the client hangs up: far less than 2 x 64 MiB went out
    await new Promise((r) => setTimeout(r, 50));
    expect(hugeBytesSent).toBeLessThan(2 * 64 * MIB);
  });

  it('the policy server admin calls (waitForPolicyServer) run under the same deadline', async () => {
    const call = waitForPolicyServer(`${base}/stall/v1`, { maxRetries: 1, baseDelayMs: 1, timeoutMs: 300 });
    await expect(call).rejects.toThrow(/failed after 2 attempt\(s\): .*no complete reply within 300 ms/);
  });
});

describe('a server that echoes the key', () => {
  it('the key appears in no call record and no error message', async () => {
    const key = `sk-test-${Math.random().toString(16).slice(2)}`;
    process.env.GSTEER_TEST_ECHO_KEY = key;
    try {
      const deps = recordingDeps();
      const call = createEndpoint(options(`${base}/echo-key/v1`, { apiKeyEnv: 'GSTEER_TEST_ECHO_KEY', maxRetries: 1 }), deps).chat(ask);
      const err = await call.catch((e: Error) => e);
      expect(err).toBeInstanceOf(TransientError);
      expect(statuses(deps.records)).toEqual(['http_500', 'http_500']);
      const out = `${(err as Error).message}\n${JSON.stringify(deps.records)}`;
      expect(out).toContain('invalid key Bearer ***');
      expect(out).not.toContain(key);
    } finally {
      delete process.env.GSTEER_TEST_ECHO_KEY;
    }
  });
});

describe('Retry-After values that are odd', () => {
  // [header value, wait]: clamped to [baseDelayMs 500, maxRetryAfterMs 60000]; unreadable -> backoff 500
  const cases: [string, number][] = [
    ['-5', 500], // negative: the floor, not an immediate retry
    ['0', 500],
    [new Date(Date.now() - 3_600_000).toUTCString(), 500], // a past date
    ['99999999999', 60_000], // huge: the cap
    ['1e400', 500], // neither delta-seconds (RFC 9110) nor a date: ignored, backoff
    ['soon', 500], // garbage: ignored, backoff
    ['2.5', 2500],
  ];
  it.each(cases)('Retry-After %j waits %i ms and the retry succeeds (2 records: http_429, ok)', async (value, wait) => {
    const deps = recordingDeps();
    const reply = await createEndpoint(options(`${base}/retry-after/${encodeURIComponent(value)}/v1`), deps).chat(ask);
    expect(reply.text).toBe('fine');
    expect(statuses(deps.records)).toEqual(['http_429', 'ok']);
    expect(deps.sleeps).toEqual([wait]);
  });
});
