// A run's call records: every attempt one line of llm_calls.jsonl tagged with the group whose
// job made it (AsyncLocalStorage, so concurrent groups on one endpoint are told apart), and
// the controller's per-update summary over the update's groups.
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/index.ts';
import { chartPlan } from '../../monitor/dashboard/charts.ts';
import { runCallSink, withCallGroup, type RunCallRecord } from '../../endpoints/index.ts';
import { RunCallReader } from '../../workers/llm-calls.ts';
import { startFakeVllm } from '../helpers/fake-vllm.ts';
import { options } from '../endpoints/helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'gsteer-calls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('run call records', () => {
  it("tags each attempt with its group and summarizes an update's groups: calls, errors, retries", async () => {
    // request 0: 429 (Retry-After 0), 1: 500; both retried. Groups g1 and g2 call concurrently.
    const fake = await startFakeVllm({ rateLimit: { on: [0], retryAfter: '0' }, serverError: { on: [1] }, answer: () => '{"answer": "ok"}' });
    try {
      const file = join(dir, 'llm_calls.jsonl');
      const sink = runCallSink(file);
      const ep = createEndpoint(options(fake.baseUrl, { role: 'simulator', chatTemplateKwargs: { enable_thinking: false }, retry: { baseDelayMs: 1 } }), {
        sink,
      });
      const ask = () => ep.chat({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 32 });
      fake.hold();
      const g1 = withCallGroup('s000001-g0', () => ask());
      const g2 = withCallGroup('s000001-g1', () => ask());
      const late = withCallGroup('s000002-g0', () => ask());
      while (fake.inFlight < 3) await new Promise((r) => setTimeout(r, 10));
      fake.releaseAll();
      await Promise.all([g1, g2, late]);
      await ep.chat({ messages: [{ role: 'user', content: 'outside any group' }] });

      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as RunCallRecord);
      expect(lines).toHaveLength(6); // 4 calls, 2 of them retried once
      expect(lines.filter((r) => r.groupId === undefined)).toHaveLength(1);
      const failed = lines.filter((r) => r.status !== 'ok');
      expect(failed.map((r) => r.status).sort()).toEqual(['http_429', 'http_500']);
      // the retries carry the group of the call they retry
      for (const f of failed) expect(lines.some((r) => r.groupId === f.groupId && r.retries === 1 && r.status === 'ok')).toBe(true);

      const reader = new RunCallReader(file);
      const step1 = reader.take(['s000001-g0', 's000001-g1']);
      const failedInStep1 = failed.filter((r) => r.groupId?.startsWith('s000001')).length;
      expect(step1['llm/simulator/calls']).toBe(2 + failedInStep1);
      expect(step1['llm/simulator/errors']).toBe(failedInStep1);
      expect(step1['llm/simulator/retries']).toBe(failedInStep1);
      expect(step1['llm/simulator/latency_p95_ms']).toBeGreaterThanOrEqual(step1['llm/simulator/latency_p50_ms']!);
      expect(reader.take(['s000001-g0'])).toEqual({}); // consumed once
      // a line still being written is read once it is whole
      appendFileSync(file, '{"ts":"2026-01-01T00:00:00Z","role":"judge","endpoint":"x","model":"m","status":"ok","latencyMs":5,');
      expect(reader.take(['s000003-g0'])).toEqual({});
      appendFileSync(file, '"promptTokens":1,"completionTokens":2,"retries":0,"error":null,"groupId":"s000003-g0"}\n');
      expect(reader.take(['s000003-g0'])).toMatchObject({
        'llm/judge/calls': 1,
        'llm/judge/errors': 0,
        'llm/judge/latency_p50_ms': 5,
        'llm/judge/completion_tokens': 2,
      });
      expect(reader.take(['s000002-g0'])['llm/simulator/calls']).toBe(1 + failed.filter((r) => r.groupId === 's000002-g0').length);
    } finally {
      await fake.close();
    }
  });

  it('the dashboard draws llm/<role>/... in its own panels', () => {
    const plan = chartPlan([
      'step',
      'reward',
      'llm/simulator/calls',
      'llm/simulator/retries',
      'llm/judge/errors',
      'llm/simulator/latency_p50_ms',
      'llm/simulator/latency_p95_ms',
      'llm/judge/prompt_tokens',
    ]);
    expect(plan.find((c) => c.id === 'llm_calls')?.series.map((s) => s.key)).toEqual(['llm/judge/errors', 'llm/simulator/calls', 'llm/simulator/retries']);
    expect(plan.find((c) => c.id === 'llm_latency')?.series.map((s) => s.key)).toEqual(['llm/simulator/latency_p50_ms', 'llm/simulator/latency_p95_ms']);
    expect(plan.find((c) => c.id === 'llm_tokens')?.series.map((s) => s.key)).toEqual(['llm/judge/prompt_tokens']);
  });
});
