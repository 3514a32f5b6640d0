// Request-body rules per model family (endpoints/model-family.ts; method §14.6): OpenAI
// reasoning models get no temperature or top_p and `max_completion_tokens`, against a fake of
// the API that answers 400 to what the real one refuses; Qwen3 on vLLM keeps
// chat_template_kwargs (without it the fake vLLM thinks and quotes the system prompt, which the
// reply rules refuse). The callers that send temperature 0 and a token cap (the factor extractor,
// the data builder's steps, the SFT teacher) are run against the fakes as they are configured.
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { isOpenAiReasoningModel, modelFamily } from '../../endpoints/model-family.ts';
import { defaultChatTemplateKwargs } from '../../endpoints/qwen3.ts';
import { ReplyError } from '../../endpoints/errors.ts';
import { LlmFactorExtractor } from '../../eval/extractor-llm.ts';
import { llmSteps } from '../../data/build/steps.ts';
import { llmTeacher } from '../../data/sft/teacher.ts';
import { InputError } from '../../util/errors.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../helpers/fake-openai.ts';
import { startFakeVllm, type FakeVllm } from '../helpers/fake-vllm.ts';
import { options, recordingDeps } from './helpers.ts';

let openai: FakeOpenAi | null = null;
let vllm: FakeVllm | null = null;
afterEach(async () => {
  await openai?.close();
  await vllm?.close();
  openai = vllm = null;
});

const GPT = 'gpt-5.4-2026-03-05'; // the paper's extractor, data builder and downstream judge

describe('model families', () => {
  it('names OpenAI reasoning models as the API spells them, and nothing else', () => {
    for (const m of ['o1', 'o3-mini', 'o4-mini', 'o4-mini-deep-research-2025-06-26', 'gpt-5', 'gpt-5-mini', GPT, 'openai/gpt-5-nano'])
      expect(isOpenAiReasoningModel(m), m).toBe(true);
    for (const m of ['gpt-4o', 'gpt-4.1-mini', 'gpt-5-chat-latest', 'Qwen/Qwen3-32B', 'omni-7b', 'llama3']) expect(isOpenAiReasoningModel(m), m).toBe(false);
    expect([GPT, 'Qwen/Qwen3-8B', 'gpt-4o'].map(modelFamily)).toEqual(['openai_reasoning', 'qwen3', 'other']);
  });
});

describe('an OpenAI reasoning model', () => {
  const gpt = (baseUrl: string, role: string) =>
    createEndpoint(options(baseUrl, { role, model: GPT, chatTemplateKwargs: defaultChatTemplateKwargs(GPT) }), recordingDeps());

  it('gets no temperature or top_p and max_completion_tokens; the fake refuses each of the others', async () => {
    openai = await startFakeOpenAi(() => 'fine');
    const ep = gpt(openai.baseUrl, 'judge');
    const r = await ep.chat({ messages: [{ role: 'user', content: 'hi' }], temperature: 0, topP: 0.95, maxTokens: 512, seed: 2 });
    expect(r.text).toBe('fine');
    expect(openai.requests).toEqual([{ status: 200, body: { model: GPT, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 512, seed: 2 } }]);
    // what the fake refuses, sent raw: each one is a non-retried 4xx (InputError)
    for (const bad of [{ temperature: 0 }, { max_tokens: 5 }, { chat_template_kwargs: { enable_thinking: false } }]) {
      const raw = createEndpoint(options(openai.baseUrl, { model: GPT, extraBody: bad, maxRetries: 0 }), recordingDeps());
      await expect(raw.chat({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(InputError);
    }
    expect(openai.requests.slice(1).map((q) => q.status)).toEqual([400, 400, 400]);
  });

  it('serves the factor extractor (temperature 0, a token cap), the data builder and the teacher', async () => {
    openai = await startFakeOpenAi((body) => {
      const name = (body.response_format as { json_schema?: { name?: string } } | undefined)?.json_schema?.name;
      if (name === 'framing_factors') return '{"factors": ["budget under 1200 EUR"]}';
      if (name === 'gsteer_candidates') return '{"candidates": [{"description": "Budget", "criterion": "Respects the budget", "rubricItems": [0]}]}';
      return 'Compare laptops under 1200 EUR for video editing.';
    });
    const extractor = new LlmFactorExtractor({ endpoint: gpt(openai.baseUrl, 'extractor'), maxTokens: 1024, log: (m) => void m });
    expect(await extractor.extract('Compare laptops under 1200 EUR', { id: 'i1', query: 'Compare laptops' })).toEqual(['budget under 1200 EUR']);
    const steps = llmSteps(gpt(openai.baseUrl, 'builder'), { temperature: 0, maxTokens: 2048 });
    const raw = {
      id: 'p',
      user: { id: 'u', persona: [], context: [], profile: '' },
      task: { id: 't', domain: 'tech', query: 'Compare laptops', rubric: [] },
      query: 'Compare laptops',
      rubric: [{ criterion: 'Respects the budget', weight: 1 }],
    };
    expect((await steps.candidates(raw)).map((c) => c.description)).toEqual(['Budget']);
    const teacher = llmTeacher({ endpoint: gpt(openai.baseUrl, 'teacher'), maxTokens: 256 });
    expect(await teacher.refine({ query: 'Compare laptops', profile: '', slots: [] })).toBe('Compare laptops under 1200 EUR for video editing.');
    expect(openai.requests.map((q) => q.status)).toEqual([200, 200, 200]);
    for (const q of openai.requests) {
      expect(q.body).not.toHaveProperty('temperature');
      expect(q.body).not.toHaveProperty('max_tokens');
      expect(q.body).toHaveProperty('max_completion_tokens');
    }
  });
});

describe('Qwen3 on vLLM', () => {
  it('keeps chat_template_kwargs, temperature and max_tokens (without the kwargs the model thinks past max_tokens and the reply is refused)', async () => {
    vllm = await startFakeVllm({ answer: () => 'I prefer trains.' });
    const ep = createEndpoint(options(vllm.baseUrl, { chatTemplateKwargs: defaultChatTemplateKwargs('Qwen/Qwen3-32B'), maxRetries: 0 }), recordingDeps());
    const req = {
      messages: [
        { role: 'system' as const, content: 'You play a user.' },
        { role: 'user' as const, content: 'How do you travel?' },
      ],
      temperature: 0.7,
      topP: 1,
      maxTokens: 24,
    };
    expect((await ep.chat(req)).text).toBe('I prefer trains.');
    expect(vllm.requests[0]!.body).toMatchObject({ temperature: 0.7, top_p: 1, max_tokens: 24, chat_template_kwargs: { enable_thinking: false } });
    const thinking = createEndpoint(options(vllm.baseUrl, { chatTemplateKwargs: null, maxRetries: 0 }), recordingDeps());
    await expect(thinking.chat(req)).rejects.toThrow(ReplyError);
  });
});
