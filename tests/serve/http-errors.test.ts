// Error handling of the HTTP front, through the real `openai` client and raw fetch:
// OpenAI's error shape, the right 4xx code, and a message naming the rule.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { makeTinyModel, TINY_CONTEXT } from './tiny-model.ts';

let tiny: ReturnType<typeof makeTinyModel>;
let server: RunningServer;
let client: OpenAI;

beforeAll(async () => {
  tiny = makeTinyModel();
  server = await startServer({ modelDir: tiny.dir, servedModelName: 'base', backend: 'wasm' });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  tiny?.cleanup();
});

async function apiError(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (e) {
    if (e instanceof OpenAI.APIError) return e;
    throw e;
  }
  throw new Error('expected the request to fail');
}

const ok = { model: 'base', prompt: [1, 2, 3], max_tokens: 2 };

describe('request validation', () => {
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['top_p out of range', { top_p: 1.3 }, 400, 'top_p must be in (0, 1] but is 1.3'],
    ['top_p zero', { top_p: 0 }, 400, 'top_p must be in (0, 1] but is 0'],
    ['negative temperature', { temperature: -0.5 }, 400, 'temperature must be in [0, 2] but is -0.5'],
    ['n zero', { n: 0 }, 400, 'n must be an integer in [1, 64] but is 0'],
    ['fractional max_tokens', { max_tokens: 2.5 }, 400, 'max_tokens must be an integer >= 1 but is 2.5'],
    ['logprobs above 20', { logprobs: 21 }, 400, 'logprobs must be an integer in [0, 20] but is 21'],
    ['string seed', { seed: 'x' }, 400, 'seed must be an integer but is "x"'],
    ['token id out of range', { prompt: [1, 999999] }, 400, 'prompt[1] must be a token id in [0, 151936) but is 999999'],
    ['empty prompt', { prompt: '' }, 400, 'prompt is empty'],
    ['a penalty', { presence_penalty: 0.5 }, 400, 'presence_penalty is not supported by gsteer serve (got 0.5); omit it'],
    ['stop not strings', { stop: [1] }, 400, 'stop must be a non-empty string or a list of non-empty strings'],
    [
      'beyond the context',
      { max_tokens: TINY_CONTEXT - 2 },
      400,
      `This model's maximum context length is ${TINY_CONTEXT} tokens. However, you requested ${TINY_CONTEXT + 1} tokens (3 in the prompt, ${TINY_CONTEXT - 2} in the completion)`,
    ],
    ['unknown model', { model: 'nope' }, 404, "The model 'nope' does not exist"],
  ];
  for (const [name, patch, status, message] of cases) {
    it(`${name} -> ${status}`, async () => {
      const e = await apiError(client.completions.create({ ...ok, ...patch } as never));
      expect(e.status).toBe(status);
      expect(e.message).toContain(message);
    });
  }

  it('chat: bad role and thinking enabled are 400', async () => {
    const bad = await apiError(client.chat.completions.create({ model: 'base', messages: [{ role: 'tool', content: 'x' }] } as never));
    expect(bad.status).toBe(400);
    expect(bad.message).toContain('messages[0].role must be one of system, user, assistant but is "tool"');
    const think = await apiError(
      client.chat.completions.create({ model: 'base', messages: [{ role: 'user', content: 'x' }], chat_template_kwargs: { enable_thinking: true } } as never),
    );
    expect(think.message).toContain('enable_thinking must be false');
  });
});

describe('HTTP layer', () => {
  it('malformed JSON is a 400 in OpenAI shape', async () => {
    const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', body: '{"model": "base",', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; type: string; param: unknown; code: unknown } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/^request body is not valid JSON/);
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  });

  it('unknown route 404, wrong method 405 with Allow', async () => {
    const r404 = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(r404.status).toBe(404);
    const r405 = await fetch(`${server.url}/v1/completions`);
    expect(r405.status).toBe(405);
    expect(r405.headers.get('allow')).toBe('POST');
    expect(((await r405.json()) as { error: { message: string } }).error.message).toContain('GET is not allowed on /v1/completions; use POST');
  });

  it('adapter endpoints: unknown unload 404, missing path 400, bad path 400', async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('/v1/unload_lora_adapter', { lora_name: 'ghost' })).status).toBe(404);
    const missing = await post('/v1/load_lora_adapter', { lora_name: 'a' });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain('lora_path must be a non-empty string but is undefined');
    const base = await post('/v1/load_lora_adapter', { lora_name: 'base', lora_path: '/tmp' });
    expect(base.status).toBe(400);
  });

  it('health answers', async () => {
    const res = await fetch(`${server.url}/health`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe('ok');
  });
});
