// gsteer's Tinker-API server over real HTTP with a small real engine (tests/helpers/toy-engine.ts):
// futures and long polls, seq_id ordering, idempotency (same key, same seq: one run), protobuf +
// zstd and JSON bodies, protobuf or JSON results by Accept, save / load with and without the
// optimizer, weights_info, the API key, and errors that say what to do.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTrainerService, type RunningService } from '../../../trainer/service/server.ts';
import { decodeForwardBackwardOutput, encodeForwardBackwardRequest } from '../../../trainer/tinker/proto-codec.ts';
import type { ForwardBackwardCall, WireDatum } from '../../../trainer/tinker/forward-backward.ts';
import { zstdCompress } from '../../../trainer/tinker/zstd.ts';
import { ToyEngine, ToySampler, toyLogprobs } from '../../helpers/toy-engine.ts';

const KEY = 'tml-test-key';
const engines: ToyEngine[] = [];
let svc: RunningService;
let stateDir: string;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'gsteer-tinker-state-'));
  svc = await startTrainerService({
    baseModel: 'toy/bigram-16',
    maxContextLength: 64,
    tokenizerId: 'none',
    arch: 'toy',
    stateDir,
    apiKey: KEY,
    retrieveHoldMs: 200,
    sampler: new ToySampler(),
    createEngine: async ({ lora }) => {
      const e = new ToyEngine(lora.seed);
      engines.push(e);
      return e;
    },
  });
});
afterAll(async () => {
  await svc.close();
  rmSync(stateDir, { recursive: true, force: true });
});

async function post(
  route: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any; bytes: Uint8Array; type: string }> {
  const isBytes = body instanceof Uint8Array;
  const res = await fetch(`${svc.url}/api/v1/${route}`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': isBytes ? 'application/x-protobuf' : 'application/json', ...headers },
    body: isBytes ? body : JSON.stringify(body),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, json: type.includes('json') ? JSON.parse(Buffer.from(bytes).toString()) : null, bytes, type };
}

async function result(requestId: string, accept = 'application/json'): Promise<any> {
  for (;;) {
    const r = await post('retrieve_future', { request_id: requestId }, { accept });
    if (r.status !== 200) return r;
    if (r.json?.type !== 'try_again') return r.json ?? decodeForwardBackwardOutput(r.bytes);
  }
}

async function newModel(seed = 3): Promise<{ modelId: string; engine: ToyEngine; sessionId: string }> {
  const s = await post('create_session', { tags: [], user_metadata: {}, sdk_version: 'test' });
  const f = await post('create_model', { session_id: s.json.session_id, model_seq_id: 0, base_model: 'toy/bigram-16', lora_config: { rank: 4, seed } });
  const done = await result(f.json.request_id);
  return { modelId: done.model_id, engine: engines[engines.length - 1] as ToyEngine, sessionId: s.json.session_id };
}

const datum: WireDatum = {
  tokens: [1, 2, 3, 4],
  inputs: { target_tokens: { values: [2, 3, 4, 5], dtype: 'int64', shape: [4] }, weights: { values: [0, 1, 1, 1], dtype: 'float32', shape: [4] } },
};
const fbCall = (modelId: string, seqId: number, forwardOnly = false): ForwardBackwardCall => ({
  modelId,
  seqId,
  forwardOnly,
  lossFn: 'cross_entropy',
  lossFnConfig: {},
  data: [datum],
});
const adam = { learning_rate: 0.05 };

describe('futures, order and idempotency', () => {
  it('runs calls in seq_id order whatever order they arrive in; a pending future long-polls to try_again', async () => {
    const { modelId, engine } = await newModel();
    let open!: () => void;
    engine.gate = new Promise((r) => (open = r));
    const opt = await post('optim_step', { model_id: modelId, seq_id: 2, adam_params: adam });
    const fb = await post('forward_backward', zstdCompress(encodeForwardBackwardRequest(fbCall(modelId, 1))), { 'content-encoding': 'zstd' });
    expect(opt.status).toBe(200);
    expect((await post('retrieve_future', { request_id: opt.json.request_id })).json).toEqual({
      type: 'try_again',
      request_id: opt.json.request_id,
      queue_state: 'active',
    });
    open();
    engine.gate = null;
    const out = await result(fb.json.request_id, 'application/x-protobuf');
    expect(out.outputs[0].logprobs).toHaveLength(4);
    expect((await result(opt.json.request_id)).metrics['grad_norm:mean']).toBeGreaterThan(0);
    expect(engine.log).toEqual(['forward_backward:cross_entropy', 'optim_step']);
  });

  it('the same idempotency key, or the same seq_id, is the same future and never runs twice; another route at a used seq_id is refused', async () => {
    const { modelId, engine } = await newModel();
    const a = await post('optim_step', { model_id: modelId, seq_id: 1, adam_params: adam }, { 'x-idempotency-key': 'run1:u1:optim' });
    const b = await post('optim_step', { model_id: modelId, seq_id: 1, adam_params: adam }, { 'x-idempotency-key': 'run1:u1:optim' });
    const c = await post('optim_step', { model_id: modelId, seq_id: 1, adam_params: adam }, { 'x-idempotency-key': 'a-fresh-sdk-retry-key' });
    expect(b.json.request_id).toBe(a.json.request_id);
    expect(c.json.request_id).toBe(a.json.request_id);
    await result(a.json.request_id);
    expect(engine.log).toEqual(['optim_step']);
    const clash = await post('forward_backward', encodeForwardBackwardRequest(fbCall(modelId, 1)));
    expect(clash.status).toBe(400);
    expect(clash.json.detail).toMatch(/seq_id 1 of model .* was used for optim_step, not forward_backward/);
    const info = await post('get_info', { model_id: modelId });
    expect(info.json).toMatchObject({ model_id: modelId, is_lora: true, lora_rank: 4, gsteer_next_seq_id: 2 });
    // the same key on ANOTHER model (a client that reloaded its state into a new model) runs there
    const other = await newModel();
    const d = await post('optim_step', { model_id: other.modelId, seq_id: 1, adam_params: adam }, { 'x-idempotency-key': 'run1:u1:optim' });
    expect(d.json.request_id).not.toBe(a.json.request_id);
    await result(d.json.request_id);
    expect(other.engine.log).toEqual(['optim_step']);
  });

  it('JSON forward_backward and the JSON result equal the protobuf ones; forward computes the toy model exactly', async () => {
    const { modelId, engine } = await newModel(5);
    const j = await post('forward_backward', {
      model_id: modelId,
      seq_id: 1,
      forward_backward_input: {
        loss_fn: 'cross_entropy',
        data: [
          {
            model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3, 4] }] },
            loss_fn_inputs: { target_tokens: { data: [2, 3, 4, 5], dtype: 'int64' }, weights: { data: [0, 1, 1, 1], dtype: 'float32' } },
          },
        ],
      },
    });
    const want = [1, 2, 3, 4].map((p, t) => Math.fround(toyLogprobs(engine.W, p)[t + 2] as number));
    const viaJson = await result(j.json.request_id);
    expect(viaJson.loss_fn_outputs[0].logprobs).toEqual({ data: want, dtype: 'float32', shape: [4] });
    const p = await post('forward_backward', encodeForwardBackwardRequest(fbCall(modelId, 2, true)));
    expect((await result(p.json.request_id, 'application/x-protobuf')).outputs[0].logprobs).toEqual(want);
    expect(engine.log).toEqual(['forward_backward:cross_entropy', 'forward']);
  });
});

describe('state', () => {
  it('save_state -> load_state_with_optimizer reproduces the next step; weights_info describes it; without the optimizer it differs', async () => {
    const { modelId, engine } = await newModel(9);
    let seq = 1;
    const step = async () => {
      await result((await post('forward_backward', encodeForwardBackwardRequest(fbCall(modelId, seq++)))).json.request_id);
      await result((await post('optim_step', { model_id: modelId, seq_id: seq++, adam_params: adam })).json.request_id);
      return Array.from(engine.W);
    };
    await step();
    const saved = await result((await post('save_weights', { model_id: modelId, seq_id: seq++, path: 'ckpt-1' })).json.request_id);
    expect(saved.path).toBe(`tinker://${modelId}/weights/ckpt-1`);
    expect(readdirSync(join(stateDir, modelId, 'weights', 'ckpt-1')).sort()).toEqual(['tinker_checkpoint.json', 'toy_adapter.json', 'toy_optimizer.json']);
    const next = await step();
    const info = await post('weights_info', { tinker_path: saved.path });
    expect(info.json).toEqual({ base_model: 'toy/bigram-16', is_lora: true, lora_rank: 4, train_unembed: true, train_mlp: true, train_attn: true });
    for (const optimizer of [true, false]) {
      await result((await post('load_weights', { model_id: modelId, seq_id: seq++, path: saved.path, optimizer })).json.request_id);
      const again = await step();
      if (optimizer) expect(again).toEqual(next);
      else expect(again).not.toEqual(next);
    }
    const dup = await post('save_weights', { model_id: modelId, seq_id: seq++, path: 'ckpt-1' });
    expect(await result(dup.json.request_id)).toEqual({
      error: expect.stringMatching(/ckpt-1 already exists; save under another name or pass overwrite=true/),
      category: 'user',
    });
  });

  it('save_weights_for_sampler without a name opens a sampling session on ephemeral weights; asample answers in protobuf', async () => {
    const { modelId } = await newModel(2);
    const r = await result((await post('save_weights_for_sampler', { model_id: modelId, seq_id: 1, sampling_session_seq_id: 0 })).json.request_id);
    expect(r.sampling_session_id).toMatch(/:sample:0$/);
    const f = await post('asample', {
      sampling_session_id: r.sampling_session_id,
      seq_id: 0,
      num_samples: 2,
      prompt: { chunks: [{ tokens: [3] }] },
      sampling_params: { max_tokens: 5, seed: 4 },
    });
    const again = await post('asample', {
      sampling_session_id: r.sampling_session_id,
      seq_id: 0,
      num_samples: 2,
      prompt: { chunks: [{ tokens: [3] }] },
      sampling_params: { max_tokens: 5, seed: 4 },
    });
    expect(again.json.request_id).toBe(f.json.request_id);
    const res = await post('retrieve_future', { request_id: f.json.request_id }, { accept: 'application/x-protobuf' });
    expect(res.type).toBe('application/x-protobuf');
    const j = await result(f.json.request_id);
    expect(j.sequences).toHaveLength(2);
    expect(j.sequences[0].tokens).toHaveLength(5);
  });
});

describe('errors', () => {
  it('a wrong API key is 401; an unknown model 404 saying how to recover; bad bodies name the field; engine input errors fail the future as "user"', async () => {
    const noKey = await fetch(`${svc.url}/api/v1/get_info`, { method: 'POST', body: '{}', headers: { 'x-api-key': 'wrong' } });
    expect(noKey.status).toBe(401);
    expect((await fetch(`${svc.url}/api/v1/healthz`)).status).toBe(200);
    const lost = await post('get_info', { model_id: 'sess-gone:train:0' });
    expect(lost.status).toBe(404);
    expect(lost.json.detail).toMatch(/create a model and load_state from your last checkpoint/);
    const bad = await post('optim_step', { model_id: 'x', adam_params: { learning_rate: 'fast' } });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toMatch(/adam_params.learning_rate = "fast"/);
    const { modelId } = await newModel();
    const wide = { ...fbCall(modelId, 1), data: [{ ...datum, inputs: { target_tokens: { values: [2, 3, 99, 5], dtype: 'int64' as const, shape: [4] } } }] };
    const f = await post('forward_backward', encodeForwardBackwardRequest(wide));
    expect(await result(f.json.request_id)).toEqual({ error: 'token 99 is outside the toy vocabulary [0, 16)', category: 'user' });
    const short = { ...fbCall(modelId, 2), data: [{ ...datum, inputs: { target_tokens: { values: [2, 3], dtype: 'int64' as const, shape: [2] } } }] };
    const s = await post('forward_backward', encodeForwardBackwardRequest(short));
    // a bad call fails its own future; the seq_ids after it still run
    expect(await result(s.json.request_id)).toEqual({
      error: expect.stringMatching(/loss_fn_inputs.target_tokens has shape \[2\]; gsteer's engine takes 1-D inputs \[N\] with N = 4/),
      category: 'user',
    });
    const after = await post('optim_step', { model_id: modelId, seq_id: 3, adam_params: adam });
    expect((await result(after.json.request_id)).type).toBe('optim_step');
    expect((await post('retrieve_future', { request_id: 'req-nope' })).status).toBe(404);
  });
});

describe('sessions', () => {
  // The sessions' clock is the test's (ServiceOptions.now): only the sweep timer runs on wall time,
  // so a loaded machine that delays heartbeats or ticks cannot end the session kept alive.
  it('a session without heartbeats (or calls) ends after the timeout and its models are unloaded; heartbeats keep one alive', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-tinker-sessions-'));
    const made: ToyEngine[] = [];
    let now = 0;
    const s = await startTrainerService({
      baseModel: 'toy',
      maxContextLength: 64,
      tokenizerId: 'none',
      arch: 'toy',
      stateDir: dir,
      sessionTimeoutMs: 150,
      retrieveHoldMs: 50,
      now: () => now,
      createEngine: async ({ lora }) => made[made.push(new ToyEngine(lora.seed)) - 1]!,
    });
    const call = (route: string, body: unknown) =>
      fetch(`${s.url}/api/v1/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({
        status: r.status,
        json: (await r.json()) as any,
      }));
    try {
      const [quiet, kept] = [(await call('create_session', {})).json.session_id, (await call('create_session', {})).json.session_id];
      const f = await call('create_model', { session_id: quiet, model_seq_id: 0, base_model: 'toy', lora_config: { rank: 2 } });
      await call('retrieve_future', { request_id: f.json.request_id });
      // t = 100: both silent for at most 100 ms <= 150; a sweep ends neither.
      now = 100;
      expect((await call('session_heartbeat', { session_id: kept })).status).toBe(200);
      s.state.sweep(150);
      expect([s.state.sessions.has(quiet), s.state.sessions.has(kept)]).toEqual([true, true]);
      // t = 200: quiet silent for 200 ms > 150, kept heard from just now; the server's own sweep ends quiet.
      now = 200;
      expect((await call('session_heartbeat', { session_id: kept })).status).toBe(200);
      for (let i = 0; i < 400 && s.state.sessions.has(quiet); i++) {
        await new Promise((r) => setTimeout(r, 50));
        expect((await call('session_heartbeat', { session_id: kept })).status).toBe(200);
      }
      expect((await call('session_heartbeat', { session_id: quiet })).status).toBe(404);
      expect((await call('session_heartbeat', { session_id: kept })).status).toBe(200);
      expect((await call('get_info', { model_id: f.json.model_id })).status).toBe(404);
      expect(made[0]!.disposed).toBe(true);
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
