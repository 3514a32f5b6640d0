// Runtime LoRA on the embedded server (vLLM's load/unload endpoints): an adapter with
// non-zero lora_B, saved in the PEFT layout by the LoRA helper's saver, changes the
// outputs; the server's logprobs under it equal the trainer's tokenLogprobs with the same
// adapter; unloading removes it (and waits for requests still using it).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { buildAdapter } from '../../model/lora/lora.ts';
import { savePeftAdapter } from '../../model/lora/peft.ts';
import { loadModel, tokenLogprobs, type LoraAdapter, type Qwen3Model } from '../../model/index.ts';
import { encodeChat, qwen3Tokenizer } from '../../core/tokenizer.ts';
import { Rng } from '../../util/rng.ts';
import { join } from 'node:path';
import { makeTinyModel } from './tiny-model.ts';
import { waitInFlight } from './wait.ts';

const tok = qwen3Tokenizer();
const promptIds = encodeChat(tok, [{ role: 'user', content: 'Plan a trip to Kyoto.' }]);

let tiny: ReturnType<typeof makeTinyModel>;
let server: RunningServer;
let client: OpenAI;
let model: Qwen3Model;
let adapter: LoraAdapter;
let adapterDir: string;

beforeAll(async () => {
  tiny = makeTinyModel();
  server = await startServer({ modelDir: tiny.dir, servedModelName: 'tiny', backend: 'wasm', loraRoots: [tiny.root] });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  model = await loadModel(tiny.dir);
  // Both factors non-zero (a trained adapter, not PEFT's B = 0 init), large enough to move
  // the random tiny model's logits visibly.
  const rng = new Rng(5);
  const fill = (n: number, scale: number) => Float32Array.from({ length: n }, () => rng.normal() * scale);
  adapter = buildAdapter(model, { r: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] }, (_l, _m, [r, inp], [out]) => ({
    A: fill(r * inp, 0.5),
    B: fill(out * r, 0.5),
  }));
  adapterDir = join(tiny.root, 'adapter-a');
  savePeftAdapter(adapter, adapterDir, tiny.dir);
});
afterAll(async () => {
  await server?.close();
  adapter?.dispose();
  model?.dispose();
  tiny?.cleanup();
});

interface Choice {
  token_ids: number[];
  logprobs: { token_logprobs: number[] };
}

async function complete(modelName: string, extra: Record<string, unknown> = {}): Promise<Choice> {
  const body = {
    model: modelName,
    prompt: promptIds,
    max_tokens: 10,
    temperature: 0.8,
    seed: 21,
    logprobs: 1,
    return_tokens_as_token_ids: true,
    return_token_ids: true,
    ...extra,
  };
  const r = (await client.completions.create(body as never)) as unknown as { choices: Choice[] };
  return r.choices[0] as Choice;
}

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

function trainerLogprobs(a: LoraAdapter | null, completion: number[]): number[] {
  const { logprobs } = tokenLogprobs(model, a, { inputIds: [[...promptIds, ...completion]] });
  const row = Array.from(logprobs.dataSync());
  logprobs.dispose();
  return row.slice(promptIds.length);
}

describe('runtime LoRA adapters', () => {
  it('load -> listed -> changes outputs -> logprobs match the trainer with the adapter', async () => {
    const base = await complete('tiny');
    const res = await post('/v1/load_lora_adapter', { lora_name: 'a', lora_path: adapterDir });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("Success: LoRA adapter 'a' added successfully.");
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny', 'a']);
    expect(models.data[1]).toMatchObject({ root: adapterDir, parent: 'tiny' });

    const withA = await complete('a');
    // Same seed, same prompt: only the adapter differs. Score the adapter's own ids both ways.
    const refA = trainerLogprobs(adapter, withA.token_ids);
    const refBase = trainerLogprobs(null, withA.token_ids);
    withA.logprobs.token_logprobs.forEach((lp, t) => expect(Math.abs(lp - (refA[t] as number))).toBeLessThan(1e-4));
    const moved = refA.map((lp, t) => Math.abs(lp - (refBase[t] as number)));
    expect(Math.max(...moved)).toBeGreaterThan(1e-2);
    // The base model is untouched by the loaded adapter.
    expect((await complete('tiny')).token_ids).toEqual(base.token_ids);
  });

  it('loads adapters given at start (gsteer serve --adapter NAME=DIR)', async () => {
    const other = await startServer({ modelDir: tiny.dir, servedModelName: 'tiny', backend: 'wasm', adapters: { pre: adapterDir } });
    try {
      const res = (await (await fetch(`${other.url}/v1/models`)).json()) as { data: { id: string; parent: string | null }[] };
      expect(res.data.map((m) => [m.id, m.parent])).toEqual([
        ['tiny', null],
        ['pre', 'tiny'],
      ]);
    } finally {
      await other.close();
    }
    await expect(startServer({ modelDir: tiny.dir, backend: 'wasm', adapters: { bad: join(tiny.root, 'nope') } })).rejects.toThrow(
      /^adapter bad=.*cannot load lora_path/,
    );
  });

  it('refuses a second load under the same name and a missing folder', async () => {
    const again = await post('/v1/load_lora_adapter', { lora_name: 'a', lora_path: adapterDir });
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: { message: string } }).error.message).toContain("The lora adapter 'a' has already been loaded");
    const missing = await post('/v1/load_lora_adapter', { lora_name: 'b', lora_path: join(tiny.root, 'nope') });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain('cannot load lora_path');
  });

  it('unload waits for the request using the adapter, then the name is gone (404)', async () => {
    const inflight = complete('a', { max_tokens: 60, ignore_eos: true });
    await waitInFlight(server.url); // the unload below really races a live request
    const res = await post('/v1/unload_lora_adapter', { lora_name: 'a' });
    expect(res.status).toBe(200);
    const done = await inflight;
    expect(done.token_ids).toHaveLength(60);
    const ref = trainerLogprobs(adapter, done.token_ids);
    done.logprobs.token_logprobs.forEach((lp, t) => expect(Math.abs(lp - (ref[t] as number))).toBeLessThan(1e-4));
    const gone = await complete('a').catch((e) => e);
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['tiny']);
  });
});
