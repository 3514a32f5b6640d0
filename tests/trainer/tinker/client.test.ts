// gsteer's Tinker client against gsteer's service (over the toy engine) through a fault proxy:
// sessions, pipelined calls kept in order, save / load, sampling; a submit whose reply is lost
// after the server applied it is retried with the same idempotency key and applied once; 503
// and 429 (Retry-After) are retried by the endpoints layer's rule and recorded; the API key
// is sent and never recorded; a lost model is ModelLostError; a stuck future times out.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTrainerService, type RunningService } from '../../../trainer/service/server.ts';
import {
  JsonlTrainerCallSink,
  ModelLostError,
  TinkerClient,
  TrainerCallAggregator,
  teeTrainerSinks,
  type TrainerCallRecord,
} from '../../../trainer/tinker/client/index.ts';
import type { EngineDatum } from '../../../trainer/engine/types.ts';
import { TransientError } from '../../../util/errors.ts';
import { ToyEngine, ToySampler } from '../../helpers/toy-engine.ts';

const KEY = 'tml-secret-value-123';
process.env.GSTEER_TEST_TINKER_KEY = KEY;
const engines: ToyEngine[] = [];
let svc: RunningService;
let proxy: Server;
let proxyUrl: string;
let dir: string;
/** route -> what the proxy does to its next requests: 'drop' = forward, then answer 503 (the reply is lost). */
const faults = new Map<string, ('503' | '429' | 'drop')[]>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gsteer-tinker-client-'));
  svc = await startTrainerService({
    baseModel: 'toy',
    maxContextLength: 64,
    tokenizerId: 'none',
    arch: 'toy',
    stateDir: join(dir, 'state'),
    apiKey: KEY,
    retrieveHoldMs: 100,
    sampler: new ToySampler(),
    createEngine: async ({ lora }) => engines[engines.push(new ToyEngine(lora.seed)) - 1]!,
  });
  proxy = createServer(async (req, res) => {
    const route = (req.url ?? '').replace('/api/v1/', '');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const fault = faults.get(route)?.shift();
    if (fault === '503' || fault === '429') {
      res.writeHead(Number(fault), { 'content-type': 'application/json', ...(fault === '429' ? { 'retry-after': '1' } : {}) });
      return res.end(JSON.stringify({ detail: `injected ${fault}` }));
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<
      string,
      string
    >;
    const up = await fetch(`${svc.url}${req.url}`, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const body = Buffer.from(await up.arrayBuffer());
    if (fault === 'drop') {
      res.writeHead(503, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ detail: 'reply lost after the server applied the call' }));
    }
    res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => proxy.close(() => r()));
  await svc.close();
  rmSync(dir, { recursive: true, force: true });
});

const datum: EngineDatum = { tokens: [1, 2, 3, 4], inputs: { target_tokens: [2, 3, 4, 5], weights: [0, 1, 1, 1] } };
const adam = { learning_rate: 0.05, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 };

async function connect(records: TrainerCallRecord[], extra: Partial<Parameters<typeof TinkerClient.connect>[0]> = {}) {
  const waits: number[] = [];
  const client = await TinkerClient.connect({
    baseUrl: proxyUrl,
    apiKeyEnv: 'GSTEER_TEST_TINKER_KEY',
    keyPrefix: 'run-test',
    sink: teeTrainerSinks({ record: (r) => records.push(r) }, new JsonlTrainerCallSink(join(dir, 'trainer_calls.jsonl'))),
    sleep: async (ms) => void waits.push(ms),
    heartbeatMs: 0,
    ...extra,
  });
  return { client, waits };
}

describe('the Tinker client', () => {
  it('pipelined forward_backward + optim_step run in order; save_state / load_state_with_optimizer reproduce a step; sampling', async () => {
    const records: TrainerCallRecord[] = [];
    const { client } = await connect(records);
    const model = await client.createModel({ baseModel: 'toy', rank: 4, seed: 3 });
    const engine = engines[engines.length - 1]!;
    const [fb] = await Promise.all([model.forwardBackward([datum], 'cross_entropy'), model.optimStep(adam)]);
    expect(fb.outputs[0]!.logprobs).toHaveLength(4);
    expect(engine.log).toEqual(['forward_backward:cross_entropy', 'optim_step']);
    const path = await model.saveState('s1');
    const step = async () => {
      await model.forwardBackward([datum], 'cross_entropy');
      await model.optimStep(adam);
      return Array.from(engine.W);
    };
    const next = await step();
    await model.loadState(path, { optimizer: true });
    expect(await step()).toEqual(next);
    const sp = await model.saveWeightsForSampler('for-sampler');
    const s = await client.sample({ modelPath: sp }, [3], { maxTokens: 4, seed: 1, numSamples: 2 });
    expect(s.sequences.map((q) => q.tokens.length)).toEqual([4, 4]);
    expect(s.sequences[0]!.logprobs).toHaveLength(4);
    // records: route, model, bytes; the idempotency key of a model call is <prefix>:<model>:<seq>
    const fbRec = records.find((r) => r.route === 'forward_backward')!;
    expect(fbRec).toMatchObject({
      role: 'trainer',
      status: 'ok',
      attempt: 1,
      retries: 0,
      modelId: model.modelId,
      idempotencyKey: `run-test:${model.modelId}:1`,
    });
    expect(fbRec.bytesSent).toBeGreaterThan(0);
    expect(fbRec.requestId).toMatch(/^req-/);
    expect(records.find((r) => r.route === 'retrieve_future' && r.bytesReceived > 0)).toBeDefined();
    client.close();
  });

  it('a submit applied by the server whose reply was lost is retried with the same key and applied ONCE; 503 and 429 are retried and recorded', async () => {
    const records: TrainerCallRecord[] = [];
    const { client, waits } = await connect(records);
    const model = await client.createModel({ baseModel: 'toy', rank: 4, seed: 5 });
    const engine = engines[engines.length - 1]!;
    await model.forwardBackward([datum], 'cross_entropy');
    faults.set('optim_step', ['drop', '503']);
    faults.set('retrieve_future', ['429']);
    await model.optimStep(adam, { key: 'run-test:u7:optim' });
    expect(engine.log).toEqual(['forward_backward:cross_entropy', 'optim_step']); // once, not twice
    const optim = records.filter((r) => r.route === 'optim_step');
    expect(optim.map((r) => [r.status, r.attempt, r.idempotencyKey])).toEqual([
      ['http_503', 1, 'run-test:u7:optim'],
      ['http_503', 2, 'run-test:u7:optim'],
      ['ok', 3, 'run-test:u7:optim'],
    ]);
    expect(records.some((r) => r.route === 'retrieve_future' && r.status === 'http_429')).toBe(true);
    expect(waits).toContain(1000); // Retry-After: 1
    const agg = new TrainerCallAggregator();
    records.forEach((r) => agg.record(r));
    const m = agg.takeWindow();
    expect(m['trainer/retries']).toBe(3);
    expect(m['trainer/errors']).toBe(3);
    expect(m['trainer/calls']).toBe(records.length);
    expect(m['trainer/bytes_sent']).toBe(records.reduce((s, r) => s + r.bytesSent, 0));
    expect(m['trainer/latency_p95_ms']).toBeGreaterThanOrEqual(m['trainer/latency_p50_ms']!);
    client.close();
  });

  it('heartbeats keep the session; the API key is sent as X-API-Key and never written to the records', async () => {
    const records: TrainerCallRecord[] = [];
    const { client } = await connect(records, { heartbeatMs: 20 });
    // heartbeats every 20 ms: wait for two (however slow a loaded machine makes them), then stop
    const beats = () => records.filter((r) => r.route === 'session_heartbeat' && r.status === 'ok').length;
    await vi.waitFor(() => expect(beats()).toBeGreaterThanOrEqual(2), { timeout: 20_000, interval: 20 });
    client.close();
    expect(readFileSync(join(dir, 'trainer_calls.jsonl'), 'utf8')).not.toContain(KEY);
    process.env.GSTEER_TEST_TINKER_KEY = 'tml-wrong';
    await expect(connect([])).rejects.toThrow(/HTTP 401.*set a valid API key in \$GSTEER_TEST_TINKER_KEY/);
    process.env.GSTEER_TEST_TINKER_KEY = KEY;
  });

  it('a model the server lost is ModelLostError; re-attaching a live model continues its seq_ids; a stuck future times out', async () => {
    const { client } = await connect([]);
    const model = await client.createModel({ baseModel: 'toy', rank: 4, seed: 8 });
    await model.forwardBackward([datum], 'cross_entropy');
    const again = await client.attachModel(model.modelId);
    expect(again.nextSeq).toBe(2);
    const engine = engines[engines.length - 1]!;
    let open!: () => void;
    engine.gate = new Promise((r) => (open = r));
    const slow = await TinkerClient.connect({ baseUrl: proxyUrl, apiKeyEnv: 'GSTEER_TEST_TINKER_KEY', futureTimeoutMs: 300, heartbeatMs: 0 });
    await expect((await slow.attachModel(model.modelId)).optimStep(adam)).rejects.toThrow(TransientError);
    open();
    svc.state.unloadModel(svc.state.model(model.modelId));
    await expect(again.forwardBackward([datum], 'cross_entropy')).rejects.toThrow(ModelLostError);
    client.close();
  });
});
