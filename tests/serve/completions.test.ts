// The embedded server over a real tiny Qwen3 checkpoint, driven by the real `openai` client:
// the rollout wire protocol (token-id prompts, sampled ids + raw logprobs), chat, seeded
// determinism under concurrency, and logprobs equal to the trainer's tokenLogprobs.
import * as tf from '@tensorflow/tfjs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../model/index.ts';
import { encodeChat, qwen3Tokenizer, type ChatMessage } from '../../core/tokenizer.ts';
import { makeTinyModel, TINY_CONTEXT } from './tiny-model.ts';

const tok = qwen3Tokenizer();
const messages: ChatMessage[] = [
  { role: 'system', content: 'Plan a trip to Kyoto.' },
  { role: 'user', content: 'What should I read about climate policy?' },
];
const promptIds = encodeChat(tok, messages);

let tiny: ReturnType<typeof makeTinyModel>;
let server: RunningServer;
let client: OpenAI;
let model: Qwen3Model;

beforeAll(async () => {
  tiny = makeTinyModel();
  server = await startServer({ modelDir: tiny.dir, servedModelName: 'tiny', backend: 'wasm', maxConcurrency: 4 });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  model = await loadModel(tiny.dir); // the trainer's own copy, for reference logprobs
});
afterAll(async () => {
  await server?.close();
  model?.dispose();
  tiny?.cleanup();
});

/** Fields vLLM adds to the OpenAI shapes (method §9 wire protocol). */
interface VllmChoice {
  index: number;
  text: string;
  finish_reason: string;
  logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Record<string, number>[] | null; text_offset: number[] };
  token_ids: number[];
  prompt_token_ids: number[];
}

const rollout = { model: 'tiny', max_tokens: 12, temperature: 0.7, top_p: 0.95, logprobs: 1, return_tokens_as_token_ids: true, return_token_ids: true };

async function complete(body: Record<string, unknown>): Promise<{ choices: VllmChoice[]; usage: OpenAI.CompletionUsage; object: string; model: string }> {
  return (await client.completions.create({ prompt: promptIds, ...rollout, ...body } as never)) as never;
}

/** Reference: the trainer's logprob of each completion id given everything before it. */
function trainerLogprobs(prompt: number[], completion: number[]): number[] {
  const { logprobs } = tokenLogprobs(model, null, { inputIds: [[...prompt, ...completion]] });
  const row = Array.from(logprobs.dataSync());
  logprobs.dispose();
  return row.slice(prompt.length);
}

describe('gsteer serve over the tiny Qwen3 (real model, real client)', () => {
  it('lists the base model', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(['tiny']);
    const card = list.data[0] as unknown as Record<string, unknown>;
    expect(card).toMatchObject({ object: 'model', owned_by: 'gsteer', root: tiny.dir, parent: null, max_model_len: TINY_CONTEXT });
  });

  it('answers the rollout protocol: sampled ids, token_id:N tokens, prompt ids echoed', async () => {
    const r = await complete({ seed: 3 });
    expect(r.object).toBe('text_completion');
    const c = r.choices[0] as VllmChoice;
    expect(c.prompt_token_ids).toEqual(promptIds);
    expect(c.token_ids.length).toBeGreaterThan(0);
    expect(c.token_ids.length).toBeLessThanOrEqual(12);
    expect(c.logprobs.tokens).toEqual(c.token_ids.map((id) => `token_id:${id}`));
    expect(c.logprobs.token_logprobs).toHaveLength(c.token_ids.length);
    expect(c.logprobs.text_offset).toHaveLength(c.token_ids.length);
    // logprobs: 1 -> the top alternative, plus the sampled token when it is not the top.
    for (const [t, top] of (c.logprobs.top_logprobs ?? []).entries()) {
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(1);
      expect(top[`token_id:${c.token_ids[t]}`]).toBe(c.logprobs.token_logprobs[t]);
    }
    if (c.finish_reason === 'length') expect(c.text).toBe(tok.decode(c.token_ids, { skipSpecialTokens: true }));
    expect(r.usage).toMatchObject({
      prompt_tokens: promptIds.length,
      completion_tokens: c.token_ids.length,
      total_tokens: promptIds.length + c.token_ids.length,
    });
    const cached = (r.usage as { prompt_tokens_details?: { cached_tokens?: number } }).prompt_tokens_details?.cached_tokens;
    expect(cached).toBeGreaterThanOrEqual(0);
    expect(cached).toBeLessThanOrEqual(promptIds.length);
  });

  it('reports logprobs equal to the trainer tokenLogprobs (1e-4), at several temperatures', async () => {
    for (const temperature of [0, 0.7, 1.5]) {
      const c = (await complete({ seed: 11, temperature, max_tokens: 16 })).choices[0] as VllmChoice;
      const ref = trainerLogprobs(promptIds, c.token_ids);
      c.logprobs.token_logprobs.forEach((lp, t) => expect(Math.abs(lp - (ref[t] as number))).toBeLessThan(1e-4));
    }
  });

  it('chat renders ChatML on the server exactly as encodeChat does, same sampling as completions', async () => {
    const body = {
      model: 'tiny',
      messages,
      max_tokens: 10,
      temperature: 0.9,
      top_p: 0.95,
      seed: 5,
      logprobs: true,
      top_logprobs: 2,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
    };
    const chat = (await client.chat.completions.create(body as never)) as unknown as {
      object: string;
      prompt_token_ids: number[];
      choices: {
        message: { role: string; content: string };
        token_ids: number[];
        logprobs: { content: { token: string; logprob: number; bytes: number[]; top_logprobs: unknown[] }[] };
      }[];
    };
    expect(chat.object).toBe('chat.completion');
    expect(chat.prompt_token_ids).toEqual(promptIds);
    const c = chat.choices[0]!;
    expect(c.message.role).toBe('assistant');
    expect(c.logprobs.content.map((x) => x.token)).toEqual(c.token_ids.map((id) => `token_id:${id}`));
    expect(c.logprobs.content.every((x) => x.top_logprobs.length === 2)).toBe(true);
    const same = (await complete({ seed: 5, temperature: 0.9, max_tokens: 10 })).choices[0] as VllmChoice;
    expect(same.token_ids).toEqual(c.token_ids);
    expect(c.logprobs.content.map((x) => x.logprob)).toEqual(same.logprobs.token_logprobs);
  });

  it('a batch of prompts gives n choices per prompt, in order, each with its own prompt ids', async () => {
    const second = tok.encode('The lazy dog');
    const r = await complete({ prompt: [promptIds, second], n: 2, seed: 4, max_tokens: 3 });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(r.choices.map((c) => c.prompt_token_ids)).toEqual([promptIds, promptIds, second, second]);
    expect(r.usage.prompt_tokens).toBe(promptIds.length + second.length);
  });

  it('without return_tokens_as_token_ids, tokens are their text and chat bytes are UTF-8', async () => {
    const c = (await complete({ seed: 2, max_tokens: 5, return_tokens_as_token_ids: false })).choices[0] as VllmChoice;
    expect(c.logprobs.tokens).toEqual(c.token_ids.map((id) => tok.decode([id])));
    const chat = (await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 5, seed: 2, logprobs: true } as never)) as unknown as {
      choices: { logprobs: { content: { token: string; bytes: number[] }[] } }[];
    };
    for (const x of chat.choices[0]!.logprobs.content) expect(x.bytes).toEqual([...Buffer.from(x.token, 'utf8')]);
  });

  it('accepts a text prompt and tokenizes it with the Qwen3 tokenizer', async () => {
    const c = (await complete({ prompt: 'The quick brown fox', seed: 1, max_tokens: 3 })).choices[0] as VllmChoice;
    expect(c.prompt_token_ids).toEqual(tok.encode('The quick brown fox'));
  });

  it('same seed + same request = same completion, also under concurrency; choices differ', async () => {
    const req = { seed: 1234, n: 2, max_tokens: 10 };
    const solo = await complete(req);
    const crowd = await Promise.all([
      ...Array.from({ length: 5 }, () => complete(req)),
      ...Array.from({ length: 3 }, (_, i) => complete({ seed: 99 + i, max_tokens: 10 })), // other traffic
    ]);
    for (const r of crowd.slice(0, 5)) expect(r.choices.map((c) => c.token_ids)).toEqual(solo.choices.map((c) => c.token_ids));
    expect(solo.choices[0]!.token_ids).not.toEqual(solo.choices[1]!.token_ids);
    const other = await complete({ ...req, seed: 1235 });
    expect(other.choices[0]!.token_ids).not.toEqual(solo.choices[0]!.token_ids);
  });

  it('greedy decoding picks the trainer argmax at every step', async () => {
    const c = (await complete({ temperature: 0, max_tokens: 6, logprobs: 3 })).choices[0] as VllmChoice;
    c.logprobs.top_logprobs!.forEach((top, t) => {
      const best = Math.max(...Object.values(top));
      expect(c.logprobs.token_logprobs[t]).toBe(best);
    });
  });

  it('stops on stop_token_ids (id kept) and on stop strings (text cut), else length', async () => {
    // ignore_eos: the random tiny model may pick EOS greedily; these cases test the other stops.
    const greedy = (await complete({ temperature: 0, max_tokens: 8, ignore_eos: true })).choices[0] as VllmChoice;
    expect(greedy.finish_reason).toBe('length');
    const stopId = greedy.token_ids[2] as number;
    const first = greedy.token_ids.indexOf(stopId);
    const byId = (await complete({ temperature: 0, max_tokens: 8, ignore_eos: true, stop_token_ids: [stopId] })).choices[0] as VllmChoice;
    expect(byId.finish_reason).toBe('stop');
    expect(byId.token_ids).toEqual(greedy.token_ids.slice(0, first + 1));
    const text = greedy.text;
    const from = text.length > 4 ? Math.floor(text.length / 2) : 0;
    const stop = text.slice(from, from + 2);
    if (stop.length === 2) {
      const byText = (await complete({ temperature: 0, max_tokens: 8, ignore_eos: true, stop: [stop] })).choices[0] as VllmChoice;
      expect(byText.finish_reason).toBe('stop');
      expect(byText.text).toBe(text.slice(0, text.indexOf(stop)));
    }
  });

  it('streams the same completion as it returns whole (text, ids, logprobs), stop strings included', async () => {
    const whole = (await complete({ seed: 31, max_tokens: 12, ignore_eos: true })).choices[0] as VllmChoice;
    const stop = whole.text.slice(4, 6); // seeded model and sampling: the same text every run
    expect(stop).toHaveLength(2);
    for (const extra of [{}, { stop: [stop] }]) {
      const ref = (await complete({ seed: 31, max_tokens: 12, ignore_eos: true, ...extra })).choices[0] as VllmChoice;
      const stream = await client.completions.create({
        prompt: promptIds,
        ...rollout,
        seed: 31,
        max_tokens: 12,
        ignore_eos: true,
        ...extra,
        stream: true,
      } as never);
      let text = '';
      const ids: number[] = [];
      const lps: number[] = [];
      let finish: string | null = null;
      for await (const chunk of stream as unknown as AsyncIterable<{ choices: VllmChoice[] }>) {
        const c = chunk.choices[0]!;
        text += c.text;
        ids.push(...c.token_ids);
        lps.push(...c.logprobs.token_logprobs);
        finish = c.finish_reason ?? finish;
      }
      expect(ids).toEqual(ref.token_ids);
      expect(lps).toEqual(ref.logprobs.token_logprobs);
      expect(text).toBe(ref.text);
      expect(finish).toBe(ref.finish_reason);
    }
  });

  it('streams chat deltas (role first) and a usage chunk', async () => {
    const body = { model: 'tiny', messages, max_tokens: 8, seed: 6, ignore_eos: true };
    const whole = await client.chat.completions.create(body as never);
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } } as never);
    let content = '';
    let role: string | undefined;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      if (chunk.usage) usage = chunk.usage;
      const d = chunk.choices[0]?.delta;
      role ??= d?.role;
      content += d?.content ?? '';
    }
    expect(role).toBe('assistant');
    expect(content).toBe(whole.choices[0]!.message.content);
    // The same prompt ran just before: the prefix cache serves all of it (with its last logits).
    expect(usage).toEqual({
      prompt_tokens: promptIds.length,
      completion_tokens: 8,
      total_tokens: promptIds.length + 8,
      prompt_tokens_details: { cached_tokens: promptIds.length },
    });
  });

  it('frees every KV cache: no tfjs tensors left behind by requests', async () => {
    await complete({ seed: 8, n: 3 }); // warm: kernels and lazily made constants
    const before = tf.memory().numTensors;
    await Promise.all([complete({ seed: 9, n: 2 }), complete({ seed: 10 })]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('refuses prompt + max_tokens beyond the context with 400', async () => {
    const e = await complete({ max_tokens: TINY_CONTEXT }).catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect((e as Error).message).toContain(`maximum context length is ${TINY_CONTEXT} tokens`);
  });
});
