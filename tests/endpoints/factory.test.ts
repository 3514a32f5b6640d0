// The one factory: Qwen3 detection for the thinking default, option checks, the key from the
// environment ("EMPTY" when unset), extra body fields, and a call per role.
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { defaultChatTemplateKwargs, isQwen3Model } from '../../endpoints/qwen3.ts';
import { InputError } from '../../util/errors.ts';
import { startFakeVllm, type FakeVllm } from '../helpers/fake-vllm.ts';
import { options, recordingDeps } from './helpers.ts';

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));

describe('Qwen3 family', () => {
  it('recognises Qwen3 names as servers spell them, and nothing else', () => {
    for (const m of ['Qwen/Qwen3-32B', 'qwen3:8b', 'Qwen3-30B-A3B-Instruct-2507', 'Qwen/Qwen3.5-27B-AWQ', 'my-org/qwen3-sim-lora'])
      expect(isQwen3Model(m), m).toBe(true);
    for (const m of ['Qwen/Qwen2.5-7B-Instruct', 'Qwen/QwQ-32B', 'gpt-4o-mini', 'qwen30b', 'llama3']) expect(isQwen3Model(m), m).toBe(false);
    expect(defaultChatTemplateKwargs('Qwen/Qwen3-32B')).toEqual({ enable_thinking: false });
    expect(defaultChatTemplateKwargs('gpt-4o-mini')).toBeNull();
  });
});

describe('createEndpoint', () => {
  it('names the bad option, its value and the rule', () => {
    expect(() => createEndpoint(options('localhost:8000'))).toThrow(InputError);
    expect(() => createEndpoint(options('localhost:8000'))).toThrow(/simulator: baseUrl = "localhost:8000" must be an http\(s\) URL/);
    expect(() => createEndpoint(options('http://h/v1', { concurrency: 0 }))).toThrow(/concurrency = 0 must be an integer >= 1/);
    expect(() => createEndpoint(options('http://h/v1', { maxRetries: -1 }))).toThrow(/maxRetries = -1/);
  });

  it('sends "Bearer EMPTY" when the key variable is unset, and merges extra body fields under ours', async () => {
    server = await startFakeVllm({ answer: () => 'fine' });
    const ep = createEndpoint(
      options(server.baseUrl, { role: 'teacher', apiKeyEnv: 'GSTEER_TEST_SURELY_UNSET', extraBody: { top_k: 20, model: 'ignored' } }),
      recordingDeps(),
    );
    await ep.chat({ messages: [{ role: 'user', content: 'hi' }], temperature: 0.7, topP: 1, maxTokens: 768, seed: 3 });
    const req = server.requests[0]!;
    expect(req.authorization).toBe('Bearer EMPTY');
    expect(req.body).toEqual({
      top_k: 20,
      model: 'Qwen/Qwen3-32B',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.7,
      top_p: 1,
      max_tokens: 768,
      seed: 3,
    });
  });

  it('serves every role through the same client and records the role', async () => {
    server = await startFakeVllm({ answer: () => 'fine' });
    const deps = recordingDeps();
    for (const role of ['policy', 'simulator', 'judge', 'teacher', 'extractor', 'builder', 'agent'])
      await createEndpoint(options(server.baseUrl, { role }), deps).chat({ messages: [{ role: 'user', content: role }] });
    expect(deps.records.map((r) => r.role)).toEqual(['policy', 'simulator', 'judge', 'teacher', 'extractor', 'builder', 'agent']);
  });

  it('runs any other route under the same rule and records it (request)', async () => {
    server = await startFakeVllm({ answer: () => 'raw', serverError: { on: [0] } });
    const deps = recordingDeps();
    const ep = createEndpoint(options(server.baseUrl, { role: 'policy' }), deps);
    const text = await ep.request('chat/completions', async (client) => {
      const r = await client.chat.completions.create({ model: ep.options.model, messages: [{ role: 'user', content: 'x' }], max_tokens: 500 });
      return { value: r.choices[0]?.message.content, usage: { promptTokens: r.usage?.prompt_tokens ?? 0, completionTokens: r.usage?.completion_tokens ?? 0 } };
    });
    expect(text).toMatch(/<\/think>\n\nraw$/); // a raw route: the reply rules are the caller's
    expect(deps.records.map((r) => [r.role, r.status, r.endpoint])).toEqual([
      ['policy', 'http_500', `${server.baseUrl}/chat/completions`],
      ['policy', 'ok', `${server.baseUrl}/chat/completions`],
    ]);
  });
});
