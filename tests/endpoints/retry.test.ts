// The retry rule against the fake vLLM server over HTTP: 429 honours Retry-After (seconds,
// HTTP-date, capped) else backs off; 5xx, connection errors and timeouts are retried then
// given up as TransientError; other 4xx are never retried (InputError with the fix). Waits
// are recorded by an injected sleep, never slept.
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { backoffMs, DEFAULT_RETRY_TIMING, parseRetryAfter } from '../../endpoints/retry-rule.ts';
import { InputError, TransientError } from '../../util/errors.ts';
import { startFakeVllm, type FakeVllm, type FakeVllmOptions } from '../helpers/fake-vllm.ts';
import { options, recordingDeps, statuses } from './helpers.ts';

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));
const start = async (o: FakeVllmOptions) => (server = await startFakeVllm({ answer: () => 'fine', ...o }));
const ask = { messages: [{ role: 'user' as const, content: 'Do you prefer trains?' }] };

describe('Retry-After and backoff', () => {
  it('reads Retry-After as seconds or an HTTP-date, and retry-after-ms first', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const h = (o: Record<string, string>) => new Headers(o);
    expect(parseRetryAfter(h({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(h({ 'retry-after': new Date(now + 5000).toUTCString() }), now)).toBe(5000);
    expect(parseRetryAfter(h({ 'retry-after': new Date(now - 5000).toUTCString() }), now)).toBe(-5000); // clamped by delayBeforeRetry
    expect(parseRetryAfter(h({ 'retry-after': 'soon' }), now)).toBeNull();
    expect(parseRetryAfter(h({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(parseRetryAfter(h({}), now)).toBeNull();
  });

  it('backs off 500 * 2^k ms capped at 8000 (worked by hand: 500, 1000, 2000, 4000, 8000, 8000)', () => {
    expect([0, 1, 2, 3, 4, 5].map((k) => backoffMs(k, DEFAULT_RETRY_TIMING))).toEqual([500, 1000, 2000, 4000, 8000, 8000]);
  });
});

describe('retried over HTTP', () => {
  it('a 429 with Retry-After: 2 waits 2000 ms, is counted, and the retry succeeds', async () => {
    await start({ rateLimit: { on: [0], retryAfter: '2' } });
    const deps = recordingDeps();
    const reply = await createEndpoint(options(server!.baseUrl), deps).chat(ask);
    expect(reply.text).toBe('fine');
    expect(deps.sleeps).toEqual([2000]);
    expect([server!.counts.http_429, server!.counts.ok]).toEqual([1, 1]);
    expect(statuses(deps.records)).toEqual(['http_429', 'ok']);
    expect(deps.records.map((r) => r.retries)).toEqual([0, 1]);
  });

  it('a Retry-After HTTP-date is read against the injected clock; a long one is capped', async () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    await start({ rateLimit: { on: [0], retryAfter: new Date(now + 7000).toUTCString() } });
    const deps = recordingDeps(() => now);
    await createEndpoint(options(server!.baseUrl), deps).chat(ask);
    expect(deps.sleeps).toEqual([7000]);
    await server!.close();
    await start({ rateLimit: { on: [0], retryAfter: '3600' } });
    const capped = recordingDeps();
    await createEndpoint(options(server!.baseUrl, { retry: { maxRetryAfterMs: 60_000 } }), capped).chat(ask);
    expect(capped.sleeps).toEqual([60_000]);
  });

  it('a 429 without Retry-After backs off', async () => {
    await start({ rateLimit: { on: [0, 1] } });
    const deps = recordingDeps();
    await createEndpoint(options(server!.baseUrl, { retry: { baseDelayMs: 100 } }), deps).chat(ask);
    expect(deps.sleeps).toEqual([100, 200]);
  });

  it('5xx is retried maxRetries times, then given up as TransientError naming the endpoint', async () => {
    await start({ serverError: { rate: 1, status: 502 } });
    const deps = recordingDeps();
    const call = createEndpoint(options(server!.baseUrl, { maxRetries: 2 }), deps).chat(ask);
    await expect(call).rejects.toThrow(TransientError);
    await expect(call).rejects.toThrow(/simulator endpoint http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions .*failed after 3 attempt\(s\), last http_502/);
    expect(server!.counts.http_502).toBe(3);
    expect(deps.sleeps).toEqual([500, 1000]);
    expect(statuses(deps.records)).toEqual(['http_502', 'http_502', 'http_502']);
  });

  it('a refused connection is retried and recorded as connection', async () => {
    await start({});
    const url = server!.baseUrl;
    await server!.close();
    server = null;
    const deps = recordingDeps();
    await expect(createEndpoint(options(url, { maxRetries: 1 }), deps).chat(ask)).rejects.toThrow(TransientError);
    expect(statuses(deps.records)).toEqual(['connection', 'connection']);
  });

  it('a reply slower than timeoutMs is a timeout, retried', async () => {
    await start({ delayMs: (n) => (n === 0 ? 1500 : 0) });
    const deps = recordingDeps();
    const reply = await createEndpoint(options(server!.baseUrl, { timeoutMs: 300 }), deps).chat(ask);
    expect(reply.text).toBe('fine');
    expect(statuses(deps.records)).toEqual(['timeout', 'ok']);
  });
});

describe('never retried', () => {
  it('a 400 is one request and an InputError with the status and the fix', async () => {
    await start({ rejectUnknownFields: true });
    const deps = recordingDeps();
    const call = createEndpoint(options(server!.baseUrl, { chatTemplateKwargs: { enable_thinking: false } }), deps).chat(ask);
    await expect(call).rejects.toThrow(InputError);
    await expect(call).rejects.toThrow(
      /rejected the request with HTTP 400: .*chat_template_kwargs.*not retried: .*chatTemplateKwargs \(null for servers that reject unknown fields/,
    );
    expect(server!.requests.length).toBe(1);
    expect(deps.sleeps).toEqual([]);
  });

  it('an unknown model (404) names the model list; a bad key (401) names the variable', async () => {
    await start({ apiKey: 'right' });
    process.env.GSTEER_TEST_FAKE_KEY = 'right';
    const e404 = createEndpoint(options(server!.baseUrl, { model: 'Qwen/Qwen3-8B', apiKeyEnv: 'GSTEER_TEST_FAKE_KEY' }), recordingDeps()).chat(ask);
    await expect(e404).rejects.toThrow(/HTTP 404.*GET \/v1\/models/);
    const e401 = createEndpoint(options(server!.baseUrl, { apiKeyEnv: 'GSTEER_TEST_UNSET_KEY' }), recordingDeps()).chat(ask);
    await expect(e401).rejects.toThrow(/HTTP 401.*\$GSTEER_TEST_UNSET_KEY/);
    expect(server!.requests.length).toBe(2);
    delete process.env.GSTEER_TEST_FAKE_KEY;
  });
});
