// Server and trainer agree on the mask (issue 14): constrained episodes sampled by gsteer
// serve (the policy grammar and its token filter, a non-zero LoRA on a tiny random base), then
// the trainer's replay of each turn's masks and its train step at policy lag 0. The GRPO
// ratio against the server's logprobs, exp(logp_theta - logp_server), is 1 within 1e-5 on
// every policy token; scoring the same tokens under the raw softmax gives Z_allowed / Z_all,
// below 1 wherever the mask removed mass. Run on the cpu backend: on wasm the server's
// KV-cache decode and the trainer's full forward already differ by up to ~1e-4 for
// unmasked tokens (XNNPACK's kernels for one row and for many round differently;
// serve/README.md), which would hide what this test is about.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoraSchema } from '../../configs/schema.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { runEpisode } from '../../rollout/episode.ts';
import { OpenAIPolicyClient } from '../../rollout/policy-client.ts';
import { SeedSimulator } from '../../rollout/simulator-seed.ts';
import type { Trajectory } from '../../core/types.ts';
import { InMemoryUserStore } from '../../rollout/user-store-memory.ts';
import { startServer, type RunningServer } from '../../serve/server.ts';
import { selectBackend } from '../../model/backend.ts';
import { replayTurnMasks } from '../../structured/turn-masks.ts';
import { ReplayPool } from '../../structured/replay-pool.ts';
import { createLora } from '../../model/lora/lora.ts';
import { savePeftAdapter } from '../../model/lora/peft.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../model/index.ts';
import { AdamW } from '../../trainer/optim/adamw.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { trainStep } from '../../trainer/step.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { baseKeptIds, initModel, PRESETS } from '../../model/init.ts';
import { SYSTEM_PROMPT } from '../../rollout/prompt.ts';
import { Rng } from '../../util/rng.ts';
import { EVERY_GRAMMAR } from '../../rollout/env/grammars.ts';

const instance = InstanceSchema.parse({
  id: 'i',
  userId: 'u',
  taskId: 't',
  split: 'train',
  query: 'Which laptop should I buy for my research?',
  profile: 'PhD student.',
  targets: [
    { id: 'budget', description: 'the spending limit', seedQuestion: 'What is your budget?', seedAnswer: 'Under 1200 EUR.', weight: 1, essential: true },
  ],
});

let root: string;
let model: Qwen3Model;
let adapter: LoraAdapter;
let server: RunningServer;
let trajs: Trajectory[];

beforeAll(async () => {
  await selectBackend('cpu', () => {});
  root = mkdtempSync(join(tmpdir(), 'gsteer-ratio-'));
  const MODEL = join(root, 'tiny');
  // byte tokens and specials (every text the grammar needs can be spelled) + the prompt's words
  const words = qwen3Tokenizer().encode(`${SYSTEM_PROMPT}\n${instance.query} ${instance.profile} QUERY PROFILE TURN HISTORY (nothing yet) (no slots yet)`);
  initModel(MODEL, { ...PRESETS.tiny!, maxPositionEmbeddings: 2048 }, { seed: 9, keptIds: [...baseKeptIds(), ...words] });
  model = await loadModel(MODEL);
  // A LoRA whose B is not zero, so the adapter changes every logit (a fresh one would not).
  adapter = createLora(model, LoraSchema.parse({ dropout: 0 }), 3);
  const rng = new Rng(4);
  tf.tidy(() =>
    adapter.variables().forEach((v) =>
      v.assign(
        tf.tensor(
          Float32Array.from(v.dataSync(), (x) => x + 0.05 * rng.normal()),
          v.shape,
        ),
      ),
    ),
  );
  savePeftAdapter(adapter, join(root, 'adapter'), MODEL);
  server = await startServer({ modelDir: MODEL, servedModelName: 'base', backend: 'cpu', adapters: { 'policy-v0': join(root, 'adapter') } });
  const encoder = new HashedEncoder(128);
  const deps = {
    policy: new OpenAIPolicyClient({ baseUrl: `${server.url}/v1`, apiKeyEnv: 'GSTEER_TEST_NONE', timeoutMs: 60_000, maxRetries: 0 }),
    simulator: new SeedSimulator(encoder, 0.35),
    store: new InMemoryUserStore(encoder),
    tokenizer: qwen3Tokenizer(),
  };
  await deps.store.init([{ userId: 'u', profile: '', memories: [] }]);
  const rollout = { maxTurns: 1, maxTokens: 64, temperature: 1, topP: 0.95, retrieveCandidates: 15, retrieveTopK: 3, constrained: true };
  trajs = await Promise.all(
    [0, 1].map((index) =>
      runEpisode(deps, instance, { runId: 'r', groupId: 'g', index, policyVersion: 0, model: 'policy-v0', snapshotId: 'u@0', seed: 11, rollout }),
    ),
  );
}, 120_000);

afterAll(async () => {
  await server?.close();
  adapter?.dispose();
  model?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const turnsOf = () => trajs.flatMap((t) => t.turns);

describe('constrained turns: server and trainer agree on the mask', () => {
  it('every turn was sampled under the policy grammar and its filter, and parses', () => {
    expect(turnsOf().length).toBeGreaterThanOrEqual(2);
    for (const t of turnsOf()) {
      expect(t.constraint).toMatchObject({ tokenFilter: 'policy_turn', reported: true, maxTokens: 64 });
      expect(t.parsed.ok).toBe(true);
    }
  });

  it("the trainer's masked logprobs are the server's within 1e-5; raw ones are lower where the mask removed mass", async () => {
    const turns = turnsOf().map((t) => ({ promptIds: t.tokens.promptIds, completionIds: t.tokens.completionIds, constraint: t.constraint }));
    const { masks, stats } = await replayTurnMasks(turns, model, EVERY_GRAMMAR);
    expect(stats['constraint/turns']).toBe(turns.length);
    expect(stats['constraint/replay_rejected']).toBe(0);
    const inputIds = turns.map((t) => [...t.promptIds, ...t.completionIds]);
    const [masked, raw] = tf.tidy(() => [masks, undefined].map((m) => tokenLogprobs(model, adapter, { inputIds, masks: m }).logprobs.arraySync()));
    // the [N, V] bias by a one-hot matmul (issue 22) gives the gathered bias's numbers
    const [viaBias, grouped] = (['gather', 'matmul'] as const).map((maskPath) =>
      tf.tidy(() => tokenLogprobs(model, adapter, { inputIds, masks }, { maskPath }).logprobs.arraySync()),
    );
    for (const other of [masked!, grouped!]) expect(Math.max(...viaBias!.flatMap((r, b) => r.map((x, t) => Math.abs(x - other[b]![t]!))))).toBeLessThan(1e-6);
    let below = 0;
    turnsOf().forEach((t, b) => {
      const P = t.tokens.promptIds.length;
      t.tokens.logprobs.forEach((server, j) => {
        expect(Math.abs(Math.exp(masked![b]![P + j]! - server) - 1)).toBeLessThan(1e-5);
        if (Math.exp(raw![b]![P + j]! - server) < 1 - 1e-3) below++;
      });
    });
    // most positions of a turn are inside a grammar state that excludes some ids with mass
    expect(below).toBeGreaterThan(turnsOf().reduce((n, t) => n + t.tokens.logprobs.length, 0) / 4);
  }, 120_000);

  it('the first GRPO step at policy lag 0 reports the sampling ratio 1 within 1e-5', async () => {
    const turns = turnsOf();
    const { masks } = await replayTurnMasks(
      turns.map((t) => ({ promptIds: t.tokens.promptIds, completionIds: t.tokens.completionIds, constraint: t.constraint })),
      model,
      EVERY_GRAMMAR,
    );
    const P = (i: number) => turns[i]!.tokens.promptIds.length;
    const batch = {
      kind: 'policy' as const,
      inputIds: turns.map((t) => [...t.tokens.promptIds, ...t.tokens.completionIds]),
      completionMask: turns.map((t) => [...t.tokens.promptIds.map(() => 0), ...t.tokens.completionIds.map(() => 1)]),
      rolloutLogprobs: turns.map((t, i) => [...new Array<number>(P(i)).fill(0), ...t.tokens.logprobs]),
      advantages: turns.map((_, i) => (i % 2 ? 1 : -1)),
      masks,
    };
    const opt = new AdamW(adapter.variables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
    const before = adapter.variables().map((v) => v.dataSync().slice());
    const m = trainStep(loraPolicy(model, adapter), opt, batch, {
      lr: 1e-3,
      microBatchSize: 2,
      maxGradNorm: 1,
      withEntropy: true,
      grpo: { lossType: 'grpo', epsilon: 0.2, betaKl: 0, tisCap: null },
    });
    expect(Math.abs(m['sampling/importance_sampling_ratio/mean']! - 1)).toBeLessThan(1e-5);
    expect(m['sampling/logprob_diff/max']!).toBeLessThan(1e-5);
    expect(m.grad_norm).toBeGreaterThan(0);
    tf.tidy(() => adapter.variables().forEach((v, i) => v.assign(tf.tensor(before[i]!, v.shape)))); // leave the adapter as the server has it
    opt.dispose();
  }, 120_000);

  it("the replay pool (worker threads, masks taken synchronously) gives the in-process replay's masks", async () => {
    const turns = [...turnsOf(), turnsOf()[0]!].map((t, i) => ({
      promptIds: t.tokens.promptIds,
      completionIds: t.tokens.completionIds,
      ...(i === 1 ? {} : { constraint: t.constraint }),
    }));
    const { masks, stats } = await replayTurnMasks(turns, model, EVERY_GRAMMAR);
    const pool = new ReplayPool(EVERY_GRAMMAR, 2);
    try {
      const pending = pool.start(turns, model);
      expect(pending.masks.length).toBe(turns.length);
      turns.forEach((_, b) => expect(pending.masks[b], `sequence ${b}`).toEqual(masks[b]));
      expect(pending.masks[1]).toBeNull(); // unconstrained
      const s = pending.stats();
      for (const k of ['constraint/turns', 'constraint/replay_rejected', 'constraint/distinct_masks'] as const) expect(s[k]).toBe(stats[k]);
      // a turn whose recorded spec hash differs is refused before anything is sent
      const bad = [{ ...turns[0]!, constraint: { ...turns[0]!.constraint!, specSha256: '0'.repeat(64) } }];
      expect(() => pool.start(bad, model)).toThrow(/sampled under constraint 000000000000/);
    } finally {
      await pool.close();
    }
  }, 120_000);
});
