// The fake vLLM server itself, over plain fetch: it must behave like vLLM serving Qwen3 or
// every test built on it proves nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { hashedEmbedding } from '../../encoders/hashed.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { startFakeVllm, type FakeVllm, type FakeVllmOptions } from '../helpers/fake-vllm.ts';

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));
const start = async (o: FakeVllmOptions) => (server = await startFakeVllm(o));

async function post(path: string, body: Record<string, unknown>) {
  const res = await fetch(`${server!.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}
const chat = (extra: Record<string, unknown> = {}) =>
  post('/chat/completions', {
    model: 'Qwen/Qwen3-32B',
    messages: [
      { role: 'system', content: 'SECRET-SYSTEM-PROMPT' },
      { role: 'user', content: 'hi' },
    ],
    ...extra,
  });

describe('fake vLLM serving Qwen3', () => {
  it('lists its model like vLLM and answers 404 for another', async () => {
    await start({});
    const models = (await (await fetch(`${server!.baseUrl}/models`)).json()) as { data: { id: string; owned_by: string }[] };
    expect(models.data.map((m) => [m.id, m.owned_by])).toEqual([['Qwen/Qwen3-32B', 'vllm']]);
    const r = await chat({ model: 'other' });
    expect(r.status).toBe(404);
    expect(r.body.error.message).toContain('`other` does not exist');
  });

  it('thinks unless enable_thinking is false, and its thinking quotes the system prompt', async () => {
    await start({ answer: () => 'ANSWER' });
    const on = await chat();
    expect(on.body.choices[0].message.content).toMatch(/^<think>\n[\s\S]*SECRET-SYSTEM-PROMPT[\s\S]*<\/think>\n\nANSWER$/);
    const off = await chat({ chat_template_kwargs: { enable_thinking: false } });
    expect(off.body.choices[0].message.content).toBe('ANSWER');
    expect([server!.counts.thinking, server!.counts.thinking_off]).toEqual([1, 1]);
  });

  it('with a reasoning parser moves the thinking to reasoning_content', async () => {
    await start({ answer: () => 'ANSWER', reasoningParser: 'reasoning_content' });
    const m = (await chat()).body.choices[0].message;
    expect(m.content).toBe('ANSWER');
    expect(m.reasoning_content).toContain('SECRET-SYSTEM-PROMPT');
    expect(server!.counts.reasoning_parsed).toBe(1);
  });

  it('cuts at max_tokens with the real Qwen3 tokenizer, inside <think> when the budget ends there', async () => {
    await start({ answer: () => 'ANSWER', thinking: () => 'one two three four five six seven eight nine ten' });
    const tok = qwen3Tokenizer();
    const full = '<think>\none two three four five six seven eight nine ten\n</think>\n\nANSWER';
    const r = await chat({ max_tokens: 4 });
    expect(r.body.choices[0].finish_reason).toBe('length');
    expect(r.body.usage.completion_tokens).toBe(4);
    expect(r.body.choices[0].message.content).toBe(tok.decode(tok.encode(full).slice(0, 4)));
    expect(r.body.choices[0].message.content).not.toContain('</think>');
    expect(server!.counts.truncated_in_think).toBe(1);
    const whole = await chat({ max_tokens: 1000 });
    expect(whole.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: full } });
    expect(whole.body.usage.completion_tokens).toBe(tok.encode(full).length);
  });

  it('fences, echoes and violates on the listed requests', async () => {
    const off = { chat_template_kwargs: { enable_thinking: false } };
    await start({ answer: () => '{"a":1}', fence: { on: [0] }, echoSystemPrompt: { on: [1] }, violateSchema: { on: [2] } });
    const contents = [];
    for (let i = 0; i < 4; i++) contents.push((await chat(off)).body.choices[0].message.content);
    expect(contents).toEqual(['```json\n{"a":1}\n```', 'SECRET-SYSTEM-PROMPT', '{"unexpected_field": "not in the schema"}', '{"a":1}']);
  });

  it('answers 429 with Retry-After and 5xx on the listed requests', async () => {
    await start({ rateLimit: { on: [0], retryAfter: '3' }, serverError: { on: [1], status: 503 } });
    const a = await chat();
    expect([a.status, a.headers.get('retry-after')]).toEqual([429, '3']);
    expect((await chat()).status).toBe(503);
    expect((await chat()).status).toBe(200);
    expect([server!.counts.http_429, server!.counts.http_503, server!.counts.ok]).toEqual([1, 1, 1]);
  });

  it('draws rate faults from its seed: same seed, same faults; another seed, other faults', async () => {
    const outcomes = async (seed: number) => {
      await start({ seed, serverError: { rate: 0.5 } });
      for (let i = 0; i < 24; i++) await chat({ messages: [{ role: 'user', content: `q${i}` }] });
      const out = server!.requests.map((r) => r.outcome);
      await server!.close();
      server = null;
      return out;
    };
    const a = await outcomes(7);
    expect(await outcomes(7)).toEqual(a);
    expect(await outcomes(8)).not.toEqual(a);
    expect(a).toContain('http_500');
    expect(a).toContain('ok');
  });

  it('rejects non-OpenAI fields when told to, and json_schema when it lacks it', async () => {
    await start({ rejectUnknownFields: true, supportsJsonSchema: false });
    const r = await chat({ chat_template_kwargs: { enable_thinking: false } });
    expect([r.status, r.body.error.message]).toEqual([400, 'Unrecognized request argument supplied: chat_template_kwargs']);
    expect((await chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } })).status).toBe(400);
  });

  it('embeds with the hashed n-gram encoder', async () => {
    await start({ embeddingDim: 8 });
    const r = await post('/embeddings', { model: 'Qwen/Qwen3-32B', input: ['a b', 'c'] });
    expect(r.body.data.map((d: { embedding: number[] }) => d.embedding)).toEqual([Array.from(hashedEmbedding('a b', 8)), Array.from(hashedEmbedding('c', 8))]);
  });
});
