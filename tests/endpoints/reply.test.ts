// The reply rules over HTTP against the fake vLLM server: thinking removed (or, with a
// reasoning parser, never read), truncated / unclosed-<think> / echoed / non-JSON /
// schema-violating replies refused and retried, fenced JSON accepted, and after the last
// retry a ReplyError that carries the reply but never quotes it in its message.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { ReplyError } from '../../endpoints/errors.ts';
import { answerText, removeThinking, stripFences } from '../../endpoints/reply.ts';
import { startFakeVllm, type FakeVllm, type FakeVllmOptions } from '../helpers/fake-vllm.ts';
import { options, recordingDeps, statuses } from './helpers.ts';

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));
const start = async (o: FakeVllmOptions) => (server = await startFakeVllm(o));

const SYSTEM = 'You play a user. CANARY-7f3a seed answer: the blue one. Reply with JSON {"target_id", "answer"}.';
const ask = {
  messages: [
    { role: 'system' as const, content: SYSTEM },
    { role: 'user' as const, content: 'Which colour?' },
  ],
  maxTokens: 200,
};
const Answer = z.strictObject({ target_id: z.string().nullable(), answer: z.string().min(1) });
const spec = { name: 'simulator_answer', schema: Answer };
const good = '{"target_id": "t1", "answer": "I like blue."}';

describe('reading a reply', () => {
  it('removes closed think blocks, keeps what follows a </think> whose opening was in the prompt, refuses an unclosed one', () => {
    expect(removeThinking('<think>\nx\n</think>\n\nA')).toBe('A');
    expect(removeThinking('reasoning from the prompt side</think>\n\nA')).toBe('A');
    expect(() => removeThinking('<think>\nstill going')).toThrow(/unclosed_think/);
    expect(() => answerText('A', 'length', undefined)).toThrow(/truncated/);
    expect(() => answerText('<think>x</think>  ', 'stop', undefined)).toThrow(/empty/);
    expect(stripFences('```json\n{"a":1}\n```')).toBe('{"a":1}');
    expect(stripFences('```\n[1]\n```')).toBe('[1]');
  });
});

describe('JSON calls over HTTP', () => {
  it('thinking on (not configured off): the closed <think> that quotes the system prompt is removed', async () => {
    await start({ answer: () => good });
    const r = await createEndpoint(options(server!.baseUrl, { chatTemplateKwargs: null }), recordingDeps()).chatJson(ask, spec);
    expect(r.value).toEqual({ target_id: 't1', answer: 'I like blue.' });
    expect(r.text).not.toContain('CANARY');
    expect(server!.counts.thinking).toBe(1);
    expect(server!.requests[0]!.body).not.toHaveProperty('chat_template_kwargs');
  });

  it('thinking off is sent only when configured', async () => {
    await start({ answer: () => good });
    await createEndpoint(options(server!.baseUrl, { chatTemplateKwargs: { enable_thinking: false } }), recordingDeps()).chatJson(ask, spec);
    expect(server!.requests[0]!.body.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(server!.counts.thinking_off).toBe(1);
  });

  it('with a reasoning parser the reasoning field is ignored and the content is the answer', async () => {
    await start({ answer: () => good, reasoningParser: 'reasoning' });
    const r = await createEndpoint(options(server!.baseUrl), recordingDeps()).chatJson(ask, spec);
    expect(r.value.answer).toBe('I like blue.');
    expect(server!.counts.reasoning_parsed).toBe(1);
  });

  it('a reply cut inside <think> at max_tokens is refused and retried', async () => {
    await start({ answer: () => good, truncate: { on: [0], atTokens: 6 } });
    const deps = recordingDeps();
    const r = await createEndpoint(options(server!.baseUrl), deps).chatJson(ask, spec);
    expect(r.value.target_id).toBe('t1');
    expect(server!.counts.truncated_in_think).toBe(1);
    expect(statuses(deps.records)).toEqual(['reply_error:truncated', 'ok']);
  });

  it('fenced JSON is accepted', async () => {
    await start({ answer: () => good, fence: { rate: 1 } });
    const r = await createEndpoint(options(server!.baseUrl), recordingDeps()).chatJson(ask, spec);
    expect(r.value.answer).toBe('I like blue.');
    expect(server!.counts.fenced).toBe(1);
  });

  it('an echoed system prompt and a schema violation are refused, retried and recorded by kind', async () => {
    await start({ answer: () => good, echoSystemPrompt: { on: [0] }, violateSchema: { on: [1] } });
    const deps = recordingDeps();
    const r = await createEndpoint(options(server!.baseUrl), deps).chatJson(ask, spec);
    expect(r.value.target_id).toBe('t1');
    expect(statuses(deps.records)).toEqual(['reply_error:echo', 'reply_error:schema', 'ok']);
    expect(deps.records[1]!.error).toMatch(/fails the schema \(.*answer.*\)/);
  });

  it('prose around the JSON is not the JSON asked for', async () => {
    await start({ answer: (_r, n) => (n === 0 ? `Sure! ${good}` : good) });
    const deps = recordingDeps();
    await createEndpoint(options(server!.baseUrl), deps).chatJson(ask, spec);
    expect(statuses(deps.records)).toEqual(['reply_error:not_json', 'ok']);
  });

  it('after the last retry: ReplyError with the kind, the attempts and the reply, whose message quotes nothing', async () => {
    await start({ violateSchema: { rate: 1, reply: '{"answer": "CANARY-7f3a"}' } });
    const deps = recordingDeps();
    const e = await createEndpoint(options(server!.baseUrl, { maxRetries: 2 }), deps)
      .chatJson(ask, spec)
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ReplyError);
    expect(e).toMatchObject({ kind: 'schema', attempts: 3 });
    expect((e as ReplyError).reply).toContain('CANARY-7f3a');
    expect((e as ReplyError).message).not.toContain('CANARY');
    expect(JSON.stringify(deps.records)).not.toContain('CANARY');
    expect(server!.counts.violated).toBe(3);
  });

  it('with feedback, the retry carries the refused reply and the error as a follow-up turn', async () => {
    await start({ answer: () => good, violateSchema: { on: [0] } });
    await createEndpoint(options(server!.baseUrl), recordingDeps()).chatJson(ask, { ...spec, feedback: true });
    const [first, second] = server!.requests.map((r) => r.body.messages as { role: string; content: string }[]);
    expect(first).toHaveLength(2);
    expect(second!.slice(0, 2)).toEqual(first);
    expect(second![2]).toEqual({ role: 'assistant', content: '{"unexpected_field": "not in the schema"}' });
    expect(second![3]!.role).toBe('user');
    expect(second![3]!.content).toMatch(/does not follow the schema: .*answer/);
  });

  it('sends response_format as json_schema, json_object or nothing, as configured', async () => {
    await start({ answer: () => good, supportsJsonSchema: false });
    const sent = async (mode: 'json_schema' | 'json_object' | 'none') => {
      await createEndpoint(options(server!.baseUrl, { responseFormat: mode, maxRetries: 0 }), recordingDeps())
        .chatJson(ask, spec)
        .catch(() => null);
      return server!.requests.at(-1)!;
    };
    const schemaReq = await sent('json_schema');
    expect(schemaReq.outcome).toBe('http_400');
    expect(schemaReq.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'simulator_answer',
        strict: true,
        schema: {
          type: 'object',
          properties: { target_id: { type: ['string', 'null'] }, answer: { type: 'string', minLength: 1 } },
          required: ['target_id', 'answer'],
          additionalProperties: false,
        },
      },
    });
    expect((await sent('json_object')).body.response_format).toEqual({ type: 'json_object' });
    const none = await sent('none');
    expect(none.body).not.toHaveProperty('response_format');
    expect(none.outcome).toBe('ok');
  });
});

describe('plain text calls over HTTP', () => {
  it('same thinking and truncation rules; an echoed system prompt is refused', async () => {
    await start({ answer: () => 'I like blue.', truncate: { on: [0], atTokens: 3 }, echoSystemPrompt: { on: [1] } });
    const deps = recordingDeps();
    const r = await createEndpoint(options(server!.baseUrl), deps).chat(ask);
    expect(r.text).toBe('I like blue.');
    expect(statuses(deps.records)).toEqual(['reply_error:truncated', 'reply_error:echo', 'ok']);
  });

  it('a reply still inside <think> with finish_reason stop is refused', async () => {
    await start({ answer: () => '<think>\nhmm, my instructions say CANARY', thinking: () => '' });
    const deps = recordingDeps();
    const e = await createEndpoint(options(server!.baseUrl, { maxRetries: 0, chatTemplateKwargs: { enable_thinking: false } }), deps)
      .chat(ask)
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ name: 'ReplyError', kind: 'unclosed_think', attempts: 1 });
  });
});
