// The LLM evidence filter (rollout/qref/filter-llm.ts; method §13) against the fake vLLM server
// (a real HTTP server on 127.0.0.1, tests/helpers/fake-vllm.ts), through the endpoints/ layer
// with the production option mapping (configs/endpoints.ts) and recorded retry waits.
import { afterEach, describe, expect, it } from 'vitest';
import { endpointOptions } from '../../../configs/endpoints.ts';
import { LlmFilterSchema } from '../../../configs/qref.ts';
import { createEndpoint } from '../../../endpoints/index.ts';
import { FILTER_SYSTEM_PROMPT, LlmEvidenceFilter, clip } from '../../../rollout/qref/filter-llm.ts';
import type { FilterInput } from '../../../rollout/qref/evidence-filter.ts';
import { InputError } from '../../../util/errors.ts';
import { recordingDeps, statuses } from '../../endpoints/helpers.ts';
import { startFakeVllm, type FakeVllm, type FakeVllmOptions } from '../../helpers/fake-vllm.ts';

const MODEL = 'Qwen/Qwen3-8B';
const input: FilterInput = {
  question: 'Where was the engineer Amos Kell born?',
  trace: 'Kestwick Bridge was built by Amos Kell; next I need his birthplace.',
  query: 'Amos Kell birthplace',
  results: [
    { id: 'd1', title: 'Kestwick Bridge', text: 'Stone arches over the river, built by Amos Kell.', score: 2 },
    { id: 'd2', title: 'Oat cakes', text: 'A cooking recipe with oats and butter.', score: 1.5 },
    { id: 'd3', title: 'Amos Kell', text: 'Amos Kell, the engineer, was born in Marrowby.', score: 1 },
  ],
};

let fake: FakeVllm | null = null;
afterEach(async () => {
  await fake?.close();
  fake = null;
});

async function setup(o: FakeVllmOptions, over: Record<string, unknown> = {}) {
  fake = await startFakeVllm({ model: MODEL, ...o });
  const cfg = LlmFilterSchema.parse({ baseUrl: fake.baseUrl, model: MODEL, maxRetries: 2, ...over });
  const deps = recordingDeps();
  const filter = new LlmEvidenceFilter({
    endpoint: createEndpoint(endpointOptions('filter', cfg), deps),
    temperature: cfg.temperature,
    maxTokens: cfg.maxTokens,
    maxResultChars: cfg.maxResultChars,
  });
  return { filter, deps, fake };
}

const userOf = (body: Record<string, unknown>) => (body.messages as { role: string; content: string }[]).find((m) => m.role === 'user')!.content;

describe('LlmEvidenceFilter', () => {
  it('keeps the indices of a well-formed reply; the request carries the schema with the bounds and every input', async () => {
    const { filter, deps, fake } = await setup({ answer: () => '{"kept": [2, 0]}' });
    expect(await filter.filter(input)).toEqual({ ok: true, kept: [0, 2] });
    expect(fake.requests).toHaveLength(1);
    const body = fake.requests[0]!.body;
    expect(body).toMatchObject({ model: MODEL, temperature: 0, max_tokens: 256, chat_template_kwargs: { enable_thinking: false } });
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'evidence_filter',
        strict: true,
        schema: {
          type: 'object',
          properties: { kept: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 2 } } },
          required: ['kept'],
          additionalProperties: false,
        },
      },
    });
    const messages = body.messages as { role: string; content: string }[];
    expect(messages[0]).toEqual({ role: 'system', content: FILTER_SYSTEM_PROMPT });
    const user = userOf(body);
    for (const s of [input.question, input.trace, `Search query: ${input.query}`]) expect(user).toContain(s);
    input.results.forEach((r, k) => expect(user).toContain(`[${k}] ${r.title}\n${r.text}`));
    expect(deps.records.map((r) => [r.role, r.status])).toEqual([['filter', 'ok']]);
  });

  it('cuts a long result at maxResultChars and asks nothing of an empty list', async () => {
    const { filter, fake } = await setup({ answer: () => '{"kept": []}' }, { maxResultChars: 20 });
    const long = { ...input, results: [{ id: 'x', title: 'Amos Kell', text: 'was born in Marrowby, a market town on the river Lune.', score: 1 }] };
    expect(await filter.filter(long)).toEqual({ ok: true, kept: [] });
    expect(userOf(fake.requests[0]!.body).endsWith('\n[0] Amos Kell\nwas born …')).toBe(true); // 19 code points + "…"
    expect(clip('né à Marrowby', 5)).toBe('né à…');
    expect(clip('Marrowby', 8)).toBe('Marrowby');
    expect(await filter.filter({ ...input, results: [] })).toEqual({ ok: true, kept: [] });
    expect(fake.requests).toHaveLength(1);
  });

  it('an out-of-range, negative or repeated index is bad_indices, without a retry', async () => {
    for (const [reply, detail] of [
      ['{"kept": [0, 3]}', /kept index 3 is not an integer in \[0, 3\)/],
      ['{"kept": [-1]}', /kept index -1/],
      ['{"kept": [1, 1]}', /kept index 1 appears twice/],
    ] as const) {
      const { filter, fake } = await setup({ answer: () => reply });
      const d = await filter.filter(input);
      expect(d).toMatchObject({ ok: false, reason: 'bad_indices', detail: expect.stringMatching(detail) });
      expect(fake.requests).toHaveLength(1);
      await fake.close();
    }
  });

  it('a reply inside <think>, cut at max_tokens, not JSON or not the schema is retried, then failed_call', async () => {
    const cases: [FakeVllmOptions, string][] = [
      [{ answer: () => '<think>\nResult 2 names the birthplace, so' }, 'unclosed_think'],
      [{ answer: () => '{"kept": [0, 1, 2]}', truncate: { rate: 1, atTokens: 3 } }, 'truncated'],
      [{ answer: () => 'Keep results 0 and 2.' }, 'not_json'],
      [{ answer: () => '{"keep": [2]}' }, 'schema'],
    ];
    for (const [o, kind] of cases) {
      const { filter, deps, fake } = await setup(o);
      const d = await filter.filter(input);
      expect(d).toMatchObject({ ok: false, reason: 'failed_call', detail: expect.stringContaining(kind) });
      expect(fake.requests).toHaveLength(3); // maxRetries 2
      expect(statuses(deps.records)).toEqual(Array(3).fill(`reply_error:${kind}`));
      await fake.close();
    }
  });

  it('a refused reply followed by a good one keeps the good one', async () => {
    const { filter, deps } = await setup({ answer: (_req, n) => (n === 0 ? 'Result 2.' : '{"kept": [2]}') });
    expect(await filter.filter(input)).toEqual({ ok: true, kept: [2] });
    expect(statuses(deps.records)).toEqual(['reply_error:not_json', 'ok']);
  });

  it('429 with Retry-After and 503 are retried, then the reply is used', async () => {
    const { filter, deps } = await setup({ answer: () => '{"kept": [2]}', rateLimit: { on: [0], retryAfter: '2' }, serverError: { on: [1], status: 503 } });
    expect(await filter.filter(input)).toEqual({ ok: true, kept: [2] });
    expect(statuses(deps.records)).toEqual(['http_429', 'http_503', 'ok']);
    expect(deps.sleeps).toEqual([2000, 1000]); // Retry-After 2 s; then backoff 500 ms * 2^1
  });

  it('a server down through every retry is failed_call; a rejected request (4xx) is a configuration error', async () => {
    const down = await setup({ serverError: { rate: 1, status: 503 } });
    expect(await down.filter.filter(input)).toMatchObject({ ok: false, reason: 'failed_call', detail: expect.stringContaining('failed after 3 attempt(s)') });
    await down.fake.close();
    const wrong = await setup({}, { model: 'Qwen/Qwen3-32B' }); // the server serves Qwen3-8B: 404, not retried
    await expect(wrong.filter.filter(input)).rejects.toBeInstanceOf(InputError);
    expect(wrong.fake.requests).toHaveLength(1);
  });
});
