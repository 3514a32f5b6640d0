// Continuous batching through the HTTP API on the real tiny Qwen3 (wasm): the same seeds
// give byte-identical completions (ids and logprobs) at concurrency 1, 3 and 8, with two
// different LoRA adapters and the base model in one batch, with and without prefix cache
// hits, with and without a grammar (structured outputs); a GRPO group's identical prompts are computed once; /metrics and the usage
// field count what the cache served.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { startServer, type RunningServer, type ServeOptions } from '../../serve/server.ts';
import { buildAdapter } from '../../model/lora/lora.ts';
import { savePeftAdapter } from '../../model/lora/peft.ts';
import { loadModel, tokenLogprobs, type LoraAdapter, type Qwen3Model } from '../../model/index.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { Rng } from '../../util/rng.ts';
import { makeTinyModel } from './tiny-model.ts';

const tok = qwen3Tokenizer();
const system = 'Plan a trip to Kyoto. What should I read about climate policy? The quick brown fox jumps over the lazy dog.';
const questions = [
  'yes',
  'no maybe',
  'The quick brown fox',
  'What should I read about climate policy?',
  'Plan a trip to Kyoto.',
  'maybe yes no',
  'the lazy dog',
  'no',
];
// Eight prompts sharing a system prompt (so later ones hit the prefix cache), of different lengths.
const prompts = questions.map((q) =>
  encodeChat(tok, [
    { role: 'system', content: system },
    { role: 'user', content: q },
  ]),
);

let tiny: ReturnType<typeof makeTinyModel>;
let model: Qwen3Model;
const adapters: { name: string; dir: string; lora: LoraAdapter }[] = [];

beforeAll(async () => {
  tiny = makeTinyModel();
  model = await loadModel(tiny.dir);
  for (const [name, seed, targets] of [
    ['a', 5, ['q_proj', 'v_proj', 'o_proj', 'down_proj']],
    ['b', 6, ['k_proj', 'up_proj', 'gate_proj']],
  ] as const) {
    const rng = new Rng(seed);
    const fill = (n: number) => Float32Array.from({ length: n }, () => rng.normal() * 0.5);
    const lora = buildAdapter(model, { r: 4, alpha: 8, dropout: 0, targetModules: [...targets] }, (_l, _m, [r, inp], [out]) => ({
      A: fill(r * inp),
      B: fill(out * r),
    }));
    const dir = join(tiny.root, `adapter-${name}`);
    savePeftAdapter(lora, dir, tiny.dir);
    adapters.push({ name, dir, lora });
  }
});
afterAll(() => {
  adapters.forEach((a) => a.lora.dispose());
  model?.dispose();
  tiny?.cleanup();
});

interface Choice {
  text: string;
  token_ids: number[];
  logprobs: { token_logprobs: number[] };
}
interface Completion {
  choices: Choice[];
  usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

interface Req {
  model: string;
  prompt: number[];
  seed: number;
  n?: number;
  /** More body fields (structured outputs, max_tokens). */
  extra?: Record<string, unknown>;
}

async function serve(opts: Partial<ServeOptions> = {}): Promise<RunningServer> {
  return startServer({
    modelDir: tiny.dir,
    servedModelName: 'tiny',
    backend: 'wasm',
    batching: 'on',
    blockSize: 16,
    adapters: Object.fromEntries(adapters.map((a) => [a.name, a.dir])),
    ...opts,
  });
}

async function complete(server: RunningServer, r: Req, maxTokens = 14): Promise<Completion> {
  const { extra, ...fields } = r;
  const body = {
    ...fields,
    max_tokens: maxTokens,
    temperature: 0.9,
    top_p: 0.95,
    logprobs: 1,
    return_tokens_as_token_ids: true,
    return_token_ids: true,
    ...extra,
  };
  const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()) as Completion;
}

/** All requests, at most `concurrency` in flight; results in request order. */
async function atConcurrency(server: RunningServer, reqs: Req[], concurrency: number): Promise<Completion[]> {
  const out: Completion[] = new Array(reqs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < reqs.length) {
        const i = next++;
        out[i] = await complete(server, reqs[i] as Req);
      }
    }),
  );
  return out;
}

/** The choices' ids and logprobs, as exact JSON text (byte-identical means this is equal). */
const bytesOf = (cs: Completion[]) => JSON.stringify(cs.map((c) => c.choices.map((ch) => [ch.token_ids, ch.logprobs.token_logprobs])));

async function metric(server: RunningServer, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`gsteer_serve:${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** Passes that ran more than one sequence (the step_sequences histogram: count - the <= 1 bucket). */
async function batchedPasses(server: RunningServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const count = Number(/gsteer_serve:step_sequences_count (\d+)/.exec(text)?.[1]);
  const one = Number(/gsteer_serve:step_sequences_bucket\{le="1"\} (\d+)/.exec(text)?.[1]);
  return count - one;
}

function trainerLogprobs(lora: LoraAdapter | null, prompt: number[], completion: number[]): number[] {
  const { logprobs } = tokenLogprobs(model, lora, { inputIds: [[...prompt, ...completion]] });
  const row = Array.from(logprobs.dataSync());
  logprobs.dispose();
  return row.slice(prompt.length);
}

describe('continuous batching over HTTP (tiny Qwen3, wasm)', () => {
  // two of them under a grammar (structured outputs): a regex, and the policy grammar with its token filter
  const constrained: Record<number, Record<string, unknown>> = {
    6: { structured_outputs: { regex: '[a-z ]{3,12}\\.' } },
    7: { structured_outputs: { grammar: POLICY_GRAMMAR }, gsteer_token_filter: 'policy_turn', max_tokens: 60 },
  };
  const reqs: Req[] = prompts.map((prompt, i) => ({
    model: 'tiny',
    prompt,
    seed: 100 + i,
    ...(i === 5 ? { n: 2 } : {}),
    ...(constrained[i] ? { extra: constrained[i] } : {}),
  }));

  it('completions at concurrency 1, 3 and 8 are byte-identical (ids and logprobs), with and without prefix cache hits and a grammar', async () => {
    const cold = await serve({ prefixCacheMb: 0 });
    const warm = await serve();
    try {
      const c1 = await atConcurrency(cold, reqs, 1);
      const c3 = await atConcurrency(warm, reqs, 3);
      const c8 = await atConcurrency(warm, reqs, 8); // every prompt is cached now
      expect(bytesOf(c3)).toBe(bytesOf(c1));
      expect(bytesOf(c8)).toBe(bytesOf(c1));
      // the grammars were applied (the regex's text is in its language)
      expect(c8[6]!.choices[0]!.text).toMatch(/^[a-z ]{3,12}\.?$/);
      // it really batched and really hit the cache
      expect(await batchedPasses(warm)).toBeGreaterThan(0);
      expect(c8.every((c) => c.usage.prompt_tokens_details.cached_tokens === c.usage.prompt_tokens)).toBe(true);
      expect(c1.every((c) => c.usage.prompt_tokens_details.cached_tokens === 0)).toBe(true);
      // and the numbers are the model's: the trainer's logprobs of the same ids (1e-4)
      const ch = c8[3]!.choices[0]!;
      const ref = trainerLogprobs(null, prompts[3]!, ch.token_ids);
      ch.logprobs.token_logprobs.forEach((lp, t) => expect(Math.abs(lp - ref[t]!)).toBeLessThan(1e-4));
    } finally {
      await Promise.all([cold.close(), warm.close()]);
    }
  });

  it('two adapters and the base model in one batch: the same bytes as each alone; each adapter scores as the trainer does', async () => {
    const server = await serve({ prefixCacheMb: 0 });
    try {
      const mixed: Req[] = reqs.slice(0, 6).map((r, i) => ({ ...r, n: 1, model: ['tiny', 'a', 'b'][i % 3] as string }));
      const alone = await atConcurrency(server, mixed, 1);
      const passesBefore = await batchedPasses(server);
      const together = await atConcurrency(server, mixed, 6);
      expect(bytesOf(together)).toBe(bytesOf(alone));
      expect(await batchedPasses(server)).toBeGreaterThan(passesBefore);
      mixed.forEach((r, i) => {
        const lora = adapters.find((a) => a.name === r.model)?.lora ?? null;
        const ch = together[i]!.choices[0]!;
        const ref = trainerLogprobs(lora, r.prompt, ch.token_ids);
        ch.logprobs.token_logprobs.forEach((lp, t) => expect(Math.abs(lp - ref[t]!)).toBeLessThan(1e-4));
      });
      // the adapters do change the outputs (same prompt and seed as a base request)
      const same = { prompt: prompts[0]!, seed: 7 };
      const outs = await Promise.all(['tiny', 'a', 'b'].map((m) => complete(server, { ...same, model: m })));
      expect(new Set(outs.map((o) => JSON.stringify(o.choices[0]!.token_ids))).size).toBe(3);
    } finally {
      await server.close();
    }
  });

  it('a GRPO group (4 identical prompts at once) computes its prefill once; a shared prefix reuses its full blocks', async () => {
    const server = await serve();
    try {
      const prompt = prompts[4]!;
      const group = await Promise.all([0, 1, 2, 3].map((i) => complete(server, { model: 'tiny', prompt, seed: 50 + i })));
      expect(await metric(server, 'prompt_tokens_computed_total')).toBe(prompt.length);
      expect(await metric(server, 'prompt_tokens_total')).toBe(4 * prompt.length);
      expect(group.map((c) => c.usage.prompt_tokens_details.cached_tokens).sort((x, y) => x - y)).toEqual([0, prompt.length, prompt.length, prompt.length]);
      // another question after the same system prompt: its full 16-blocks of the common start come from the cache
      const other = prompts[1]!;
      let common = 0;
      while (other[common] === prompt[common]) common++;
      expect(common).toBeGreaterThanOrEqual(32); // the chat header and system prompt: at least two blocks
      const r = await complete(server, { model: 'tiny', prompt: other, seed: 1 });
      expect(r.usage.prompt_tokens_details.cached_tokens).toBe(16 * Math.floor(common / 16));
      expect(await metric(server, 'prefix_cache_hits_total')).toBe(3 * prompt.length + 16 * Math.floor(common / 16));
      expect(await metric(server, 'prefix_cache_queries_total')).toBe(4 * prompt.length + other.length);
    } finally {
      await server.close();
    }
  });

  it('an adapter reloaded under the same name is another cache', async () => {
    const server = await serve();
    try {
      const r = { model: 'a', prompt: prompts[2]!, seed: 3 };
      await complete(server, r);
      expect((await complete(server, r)).usage.prompt_tokens_details.cached_tokens).toBe(r.prompt.length);
      const post = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect((await post('/v1/unload_lora_adapter', { lora_name: 'a' })).status).toBe(200);
      expect((await post('/v1/load_lora_adapter', { lora_name: 'a', lora_path: adapters[0]!.dir })).status).toBe(200);
      expect((await complete(server, r)).usage.prompt_tokens_details.cached_tokens).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('says how it decodes in /v1/models; serves Prometheus text on /metrics', async () => {
    const on = await serve();
    const off = await serve({ batching: 'off' });
    try {
      const card = async (s: RunningServer) => ((await (await fetch(`${s.url}/v1/models`)).json()) as { data: { batching?: unknown }[] }).data[0]!.batching;
      expect(await card(on)).toEqual({
        enabled: true,
        mode: 'on',
        backend: 'wasm',
        batch_invariant: true,
        backend_batch_invariant: true,
        max_num_batched_tokens: 256,
        block_size: 16,
        prefix_cache_mb: 256,
      });
      expect(await card(off)).toMatchObject({ enabled: false, batch_invariant: true, prefix_cache_mb: 0 });
      const res = await fetch(`${on.url}/metrics`);
      expect(res.headers.get('content-type')).toContain('text/plain');
      expect(await res.text()).toContain('# TYPE gsteer_serve:prefix_cache_hits_total counter');
      // the interleaved scheduler computes the same model: logprobs within rounding of the trainer's
      const c = (await complete(off, reqs[0]!)).choices[0]!;
      const ref = trainerLogprobs(null, prompts[0]!, c.token_ids);
      c.logprobs.token_logprobs.forEach((lp, t) => expect(Math.abs(lp - ref[t]!)).toBeLessThan(1e-4));
    } finally {
      await Promise.all([on.close(), off.close()]);
    }
  });
});
