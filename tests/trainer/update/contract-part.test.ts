// The trainer part over the Tinker contract (trainer/update/contract-part.ts) against gsteer's
// trainer service over real HTTP (the TfjsEngine on a tiny random Qwen3, cpu): version folders
// hold the engine's state, the sampler-vs-trainer KL is logged, and the stale-adapter check stops
// the run when the sampler keeps serving the previous adapter (or the base model) while the
// turns claim the new one; a service restart (the model lost) is recovered within the update.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfigSchema } from '../../../configs/schema.ts';
import { TfjsEngine } from '../../../trainer/engine/tfjs-engine.ts';
import { startTrainerService, type RunningService } from '../../../trainer/service/server.ts';
import { contractTrainerPart } from '../../../trainer/update/contract-part.ts';
import type { TrainerPart, TrainSequence } from '../../../trainer/update/part.ts';
import { StaleAdapterError } from '../../../trainer/update/sampler-check.ts';
import { Rng } from '../../../util/rng.ts';
import { randomQwen3, TINY_QWEN3 } from '../step-fixtures.ts';

await tf.setBackend('cpu');

const qcfg = TINY_QWEN3;
const model = randomQwen3(qcfg, 11);
const cfg = RunConfigSchema.parse({
  seed: 7,
  policy: { model: 'tiny' },
  lora: { r: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj', 'up_proj'] },
  grpo: { learningRate: 0.05, microBatchSize: 2, lossAggregation: 'turn', maxPolicyLag: 0 },
  trainer: { engine: 'embedded', samplerCheck: { turns: 2, every: 1 } },
});
let root: string;
let svc: RunningService;
const start = async (port = 0) =>
  startTrainerService({
    baseModel: 'tiny',
    maxContextLength: 128,
    tokenizerId: 'none',
    arch: 'qwen3',
    stateDir: join(root, 'trainer-service'),
    retrieveHoldMs: 200,
    port,
    createEngine: async ({ lora }) =>
      TfjsEngine.create(
        model,
        { r: lora.rank, alpha: lora.alpha ?? 8, dropout: lora.dropout ?? 0, targetModules: (lora.targetModules ?? ['q_proj']) as ['q_proj'] },
        lora.seed,
        { baseModel: 'tiny', microBatchSize: 2 },
      ),
  });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'gsteer-contract-part-'));
  svc = await start();
});
afterAll(async () => {
  await svc.close();
  rmSync(root, { recursive: true, force: true });
});

const versionDir = (run: string) => (v: number) => join(root, run, 'adapters', `policy-v${String(v).padStart(6, '0')}`);
const part = (run: string, folders = run) =>
  contractTrainerPart({
    cfg,
    runId: run,
    totalSteps: () => 10,
    baseUrl: svc.url,
    baseModel: 'tiny',
    embedded: { stateDir: join(root, 'trainer-service') },
    versionDir: versionDir(folders),
    log: () => {},
  });
async function save(p: TrainerPart, run: string, v: number): Promise<void> {
  const dir = versionDir(run)(v);
  mkdirSync(dir, { recursive: true });
  await p.save(dir);
}

const rng = new Rng(9);
const turns = Array.from({ length: 4 }, (_, b) => ({
  prompt: Array.from({ length: 5 + b }, () => rng.int(48)),
  completion: Array.from({ length: 6 }, () => rng.int(48)),
}));
/** The sampler's logprobs of each turn's completion under a saved version (null: the base model). */
async function sampled(run: string, v: number | null): Promise<number[][]> {
  const e = TfjsEngine.create(model, { r: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj', 'up_proj'] }, 7, {
    baseModel: 'tiny',
    microBatchSize: 4,
  });
  if (v !== null) await e.load(versionDir(run)(v), { optimizer: false });
  const data = turns.map((t) => {
    const seq = [...t.prompt, ...t.completion];
    return { tokens: seq.slice(0, -1), inputs: { target_tokens: seq.slice(1), weights: seq.slice(1).map(() => 0) } };
  });
  const r = await e.forwardBackward(data, { lossFn: 'cross_entropy', forwardOnly: true });
  e.dispose();
  return r.outputs.map((o, b) => o.logprobs!.slice(turns[b]!.prompt.length - 1));
}
const batch = (logprobs: number[][], version: number): TrainSequence[] =>
  turns.map((t, b) => ({
    promptIds: t.prompt,
    completionIds: t.completion,
    oldLogprobs: logprobs[b]!,
    advantage: [1, -1, 0.5, -0.5][b]!,
    trajectory: b,
    policyVersion: version,
  }));

describe('the trainer part over the Tinker contract', () => {
  it('saves version folders with the engine state; logs the sampler-vs-trainer KL; passes an honest sampler; stops a stale one and a base one', async () => {
    const run = 'stale';
    const p = await part(run);
    await p.init(null);
    await save(p, run, 0);
    expect(readdirSync(versionDir(run)(0)).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'engine-state.json', 'optimizer.json']);
    const s1 = await p.step(batch(await sampled(run, 0), 0), 1);
    expect(s1.diagnostics!['sampling/sampler_trainer_kl']).toBeLessThan(1e-9); // the sampler served version 0, the trainer holds it
    expect(s1.diagnostics!['sampling/stale_check/version']).toBeUndefined(); // version 0 has no predecessor
    expect(s1.diagnostics!['trainer/calls']).toBeGreaterThan(0);
    await save(p, run, 1);
    // an honest sampler: turns of version 1 sampled by version 1
    const s2 = await p.step(batch(await sampled(run, 1), 1), 2);
    expect(s2.diagnostics!['sampling/stale_check/version']).toBe(1);
    expect(s2.diagnostics!['sampling/stale_check/resolvable']).toBe(1);
    expect(s2.diagnostics!['sampling/stale_check/mse_current']).toBeLessThan(s2.diagnostics!['sampling/stale_check/mse_previous']! / 100);
    await save(p, run, 2);
    // the sampler kept serving version 1 while the turns say version 2
    await expect(p.step(batch(await sampled(run, 1), 2), 3)).rejects.toThrow(StaleAdapterError);
    await expect(p.step(batch(await sampled(run, 1), 2), 3)).rejects.toThrow(/turns sampled as adapter version 2 match the previous adapter \(version 1\)/);
    // ... or the base model
    await expect(p.step(batch(await sampled(run, null), 2), 3)).rejects.toThrow(/match the base model \(no adapter\)/);
    await p.close?.();
  }, 120_000);

  it('a restarted service (the model lost) is recovered in the update: it equals the uninterrupted one, byte for byte', async () => {
    const run = 'lost';
    const logs: string[] = [];
    const p = await contractTrainerPart({
      cfg,
      runId: run,
      totalSteps: () => 10,
      baseUrl: svc.url,
      baseModel: 'tiny',
      embedded: { stateDir: join(root, 'trainer-service') },
      versionDir: versionDir(run),
      log: (l) => logs.push(l),
    });
    const ref = await part('lost-ref');
    for (const [q, r] of [
      [p, run],
      [ref, 'lost-ref'],
    ] as const) {
      await q.init(null);
      await save(q, r, 0);
      await q.step(batch(await sampled(r, 0), 0), 1);
      await save(q, r, 1);
    }
    // the service restarts on the same port: every session and model is gone
    const port = Number(new URL(svc.url).port);
    await svc.close();
    svc = await start(port);
    // the part finds its model gone mid-update, reloads the last version it saved and runs the update again, and says so
    const a = await p.step(batch(await sampled(run, 1), 1), 2);
    expect(logs.join('\n')).toMatch(/the trainer engine lost model .*: opened a new session, created a new model and loaded the state of .*policy-v000001/);
    await save(p, run, 2);
    const ref2 = await part('lost-ref2', 'lost-ref'); // the reference run continues on the new service from its version 1
    await ref2.load(versionDir('lost-ref')(1));
    const b = await ref2.step(batch(await sampled('lost-ref', 1), 1), 2);
    await save(ref2, 'lost-ref', 2);
    expect(a.grad_norm).toBe(b.grad_norm);
    const bytes = (r: string) => readFileSync(join(versionDir(r)(2), 'adapter_model.safetensors'));
    expect(bytes(run).equals(bytes('lost-ref'))).toBe(true);
    for (const q of [p, ref, ref2]) await q.close?.();
  }, 120_000);
});
