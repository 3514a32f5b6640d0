// Call records (one per attempt, JSONL) and the per-role metrics, checked by hand.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { maskUrl } from '../../endpoints/client.ts';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { JsonlCallSink } from '../../endpoints/jsonl-sink.ts';
import { CallAggregator, percentileNearestRank, summarizeCalls } from '../../endpoints/metrics.ts';
import { teeSinks, type CallRecord } from '../../endpoints/records.ts';
import { startFakeVllm, type FakeVllm } from '../helpers/fake-vllm.ts';
import { options } from './helpers.ts';

let server: FakeVllm | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
  delete process.env.GSTEER_TEST_RECORD_KEY;
});

const rec = (role: string, status: CallRecord['status'], latencyMs: number, retries = 0, tokens: [number, number] | null = [10, 2]): CallRecord => ({
  ts: '2026-01-01T00:00:00.000Z',
  role,
  endpoint: 'http://h/v1/chat/completions',
  model: 'm',
  status,
  latencyMs,
  promptTokens: tokens?.[0] ?? null,
  completionTokens: tokens?.[1] ?? null,
  retries,
  error: status === 'ok' || status === 'cached' ? null : 'x',
});

describe('percentiles and metrics, worked by hand', () => {
  it('nearest rank: sorted[ceil(p/100 * n) - 1]', () => {
    // n=5: p50 -> rank ceil(2.5)=3 -> 3; p95 -> rank ceil(4.75)=5 -> 5
    expect([percentileNearestRank([1, 2, 3, 4, 5], 50), percentileNearestRank([1, 2, 3, 4, 5], 95)]).toEqual([3, 5]);
    // n=20 (10..200 step 10): p50 -> rank 10 -> 100; p95 -> rank 19 -> 190
    const twenty = Array.from({ length: 20 }, (_, i) => 10 * (i + 1));
    expect([percentileNearestRank(twenty, 50), percentileNearestRank(twenty, 95)]).toEqual([100, 190]);
    // n=1: every percentile is the value
    expect(percentileNearestRank([42], 95)).toBe(42);
  });

  it('summarizes per role: calls, errors, retries, cached, tokens, latency', () => {
    const m = summarizeCalls([
      rec('simulator', 'http_429', 40, 0, null),
      rec('simulator', 'ok', 10, 1),
      rec('simulator', 'ok', 30),
      rec('simulator', 'reply_error:schema', 20, 0),
      rec('simulator', 'ok', 50, 1),
      rec('simulator', 'cached', 0, 0, null),
      rec('judge', 'ok', 7),
    ]);
    // simulator sent 5 (the cached one was not sent); 2 failed; 2 were retries; latencies 10,20,30,40,50
    expect(m).toEqual({
      'llm/simulator/calls': 5,
      'llm/simulator/errors': 2,
      'llm/simulator/retries': 2,
      'llm/simulator/cached': 1,
      'llm/simulator/prompt_tokens': 40,
      'llm/simulator/completion_tokens': 8,
      'llm/simulator/latency_p50_ms': 30,
      'llm/simulator/latency_p95_ms': 50,
      'llm/judge/calls': 1,
      'llm/judge/errors': 0,
      'llm/judge/retries': 0,
      'llm/judge/cached': 0,
      'llm/judge/prompt_tokens': 10,
      'llm/judge/completion_tokens': 2,
      'llm/judge/latency_p50_ms': 7,
      'llm/judge/latency_p95_ms': 7,
    });
  });

  it('a role with only cache hits has no latency metrics', () => {
    expect(Object.keys(summarizeCalls([rec('builder', 'cached', 0, 0, null)]))).toEqual([
      'llm/builder/calls',
      'llm/builder/errors',
      'llm/builder/retries',
      'llm/builder/cached',
      'llm/builder/prompt_tokens',
      'llm/builder/completion_tokens',
    ]);
  });
});

describe('records of real calls', () => {
  it('one JSONL line per attempt with the fields, tokens from usage, no key and no prompt; metrics per window', async () => {
    server = await startFakeVllm({ apiKey: 'sk-SECRET-4242', answer: () => 'ok then', rateLimit: { on: [0], retryAfter: '1' }, serverError: { on: [2] } });
    process.env.GSTEER_TEST_RECORD_KEY = 'sk-SECRET-4242';
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-llm-records-'));
    dirs.push(dir);
    const file = join(dir, 'run', 'llm_calls.jsonl');
    const agg = new CallAggregator();
    let clock = Date.UTC(2026, 0, 1);
    const ep = createEndpoint(options(server.baseUrl, { apiKeyEnv: 'GSTEER_TEST_RECORD_KEY' }), {
      sink: teeSinks(new JsonlCallSink(file), agg),
      sleep: async () => {},
      now: () => (clock += 5), // every reading of the clock advances 5 ms
    });
    const prompt = {
      messages: [
        { role: 'system' as const, content: 'PROMPT-CANARY-91 you are a user' },
        { role: 'user' as const, content: 'q' },
      ],
    };
    await ep.chat(prompt); // request 0: 429, request 1: ok
    await ep.chat(prompt); // request 2: 500, request 3: ok
    expect(server.requests.every((r) => r.authorization === 'Bearer sk-SECRET-4242')).toBe(true);

    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('SECRET');
    expect(text).not.toContain('PROMPT-CANARY');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CallRecord);
    expect(lines.map((r) => [r.status, r.retries])).toEqual([
      ['http_429', 0],
      ['ok', 1],
      ['http_500', 0],
      ['ok', 1],
    ]);
    const usage = server.requests.filter((r) => r.outcome === 'ok').map((r) => [r.usage!.prompt_tokens, r.usage!.completion_tokens]);
    expect(lines.filter((r) => r.status === 'ok').map((r) => [r.promptTokens, r.completionTokens])).toEqual(usage);
    expect(lines[0]).toMatchObject({
      role: 'simulator',
      model: 'Qwen/Qwen3-32B',
      endpoint: `${server.baseUrl}/chat/completions`,
      promptTokens: null,
      error: '429 Too many requests',
    });
    expect(Object.keys(lines[0]!).sort()).toEqual(
      ['completionTokens', 'endpoint', 'error', 'latencyMs', 'model', 'promptTokens', 'retries', 'role', 'status', 'ts'].sort(),
    );
    // The attempt's clock is read at its start and once when it ends: 5 ms each.
    expect(lines.map((r) => r.latencyMs)).toEqual([5, 5, 5, 5]);

    const m = agg.takeWindow();
    expect([m['llm/simulator/calls'], m['llm/simulator/errors'], m['llm/simulator/retries']]).toEqual([4, 2, 2]);
    expect(m['llm/simulator/completion_tokens']).toBe(usage.reduce((s, u) => s + u[1]!, 0));
    expect(agg.takeWindow()).toEqual({}); // a new window starts empty
  });

  it('masks credentials in URLs', () => {
    expect(maskUrl('https://user:pw@api.example.com/v1/chat/completions')).toBe('https://***@api.example.com/v1/chat/completions');
    expect(maskUrl('https://h.example/v1/embeddings?api_key=abc&x=1')).toBe('https://h.example/v1/embeddings?api_key=***&x=1');
    expect(maskUrl('http://127.0.0.1:8000/v1/chat/completions')).toBe('http://127.0.0.1:8000/v1/chat/completions');
  });
});
