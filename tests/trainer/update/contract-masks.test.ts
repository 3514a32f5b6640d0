// Constrained turns through the contract (method §5.6, §5.13): a policy datum carries the
// constraint its completion was sampled under (gsteer's extension), gsteer's engine replays it
// into the same masks as the in-process step's replay, and the gradient equals trainStep's with
// those masks within 1e-6. Sent without the constraint (what a plain Tinker engine scores: the
// raw softmax) the gradient is another one, so the masks matter here. Completions are walked
// through the policy grammar on a tiny trimmed-vocabulary model (random allowed ids).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoraSchema } from '../../../configs/schema.ts';
import type { TurnConstraint } from '../../../core/types.ts';
import { POLICY_GRAMMAR } from '../../../structured/turn/grammar-ebnf.ts';
import { selectBackend } from '../../../model/backend.ts';
import { baseKeptIds, initModel, PRESETS } from '../../../model/init.ts';
import { createLora } from '../../../model/lora/lora.ts';
import { loadModel, type Qwen3Model } from '../../../model/index.ts';
import { compileConstraint, qwen3Vocab, specHash, TokenConstraint, type ConstraintSpec } from '../../../structured/index.ts';
import { replayTurnMasks } from '../../../structured/turn-masks.ts';
import { TfjsEngine } from '../../../trainer/engine/tfjs-engine.ts';
import { loraPolicy } from '../../../trainer/policy-lora.ts';
import { accumulateGradients, type PolicyBatch } from '../../../trainer/step.ts';
import { contractForwardBackward } from '../../../trainer/update/contract-step.ts';
import { Rng } from '../../../util/rng.ts';
import { EVERY_GRAMMAR } from '../../../rollout/env/grammars.ts';

let root: string;
let model: Qwen3Model;
let batch: PolicyBatch;

beforeAll(async () => {
  await selectBackend('cpu', () => {});
  root = mkdtempSync(join(tmpdir(), 'gsteer-contract-masks-'));
  initModel(join(root, 'tiny'), { ...PRESETS.tiny!, maxPositionEmbeddings: 512 }, { seed: 9, keptIds: baseKeptIds() });
  model = await loadModel(join(root, 'tiny'));
  const spec: ConstraintSpec = { type: 'grammar', grammar: POLICY_GRAMMAR };
  const constraint: TurnConstraint = { tokenFilter: null, tokenFilterVersion: null, specSha256: specHash(spec), maxTokens: 64, reported: true };
  const compiled = await compileConstraint(spec, qwen3Vocab(model.vocab?.keptIds ?? null, model.config.vocabSize));
  const rng = new Rng(8);
  const rows: { prompt: number[]; completion: number[] }[] = [];
  for (let k = 0; k < 4; k++) {
    const c = await TokenConstraint.create(compiled, { maxTokens: 64 });
    const completion: number[] = [];
    while (completion.length < 14 && !c.isTerminated()) {
      const allowed = await c.allowed();
      const id = allowed[rng.int(allowed.length)]!;
      expect(c.accept(id)).toBe(true);
      completion.push(id);
    }
    c.dispose();
    rows.push({ prompt: Array.from({ length: 5 + k }, () => 32 + rng.int(90)), completion });
  }
  const turns = rows.map((r) => ({ promptIds: r.prompt, completionIds: r.completion, constraint }));
  const { masks, stats } = await replayTurnMasks(turns, model, EVERY_GRAMMAR);
  expect(stats['constraint/replay_rejected']).toBe(0);
  batch = {
    kind: 'policy',
    inputIds: rows.map((r) => [...r.prompt, ...r.completion]),
    completionMask: rows.map((r) => [...r.prompt.map(() => 0), ...r.completion.map(() => 1)]),
    advantages: [1, -0.6, 0.4, -0.8],
    masks,
    constraints: rows.map(() => constraint),
  };
}, 180_000);

afterAll(() => {
  model?.dispose();
  rmSync(root, { recursive: true, force: true });
});

function adapter() {
  const a = createLora(model, LoraSchema.parse({ r: 4, alpha: 8, dropout: 0 }), 1);
  const r = new Rng(2);
  for (const v of a.variables())
    if (v.name.endsWith('lora_B'))
      v.assign(
        tf.tensor(
          Float32Array.from({ length: v.size }, () => r.normal() * 0.05),
          v.shape,
        ),
      );
  return a;
}
const norm = (a: number[]) => Math.sqrt(a.reduce((s, x) => s + x * x, 0));
const rel = (a: number[], b: number[]) => norm(a.map((x, i) => x - b[i]!)) / norm(b);
const grpo = { lossType: 'grpo' as const, aggregation: 'turn' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
const step = { microBatchSize: 2, lr: 1e-3, maxGradNorm: 1, adam: { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 }, grpo, prefixGrouping: true };

async function contract(b: PolicyBatch, extensions: boolean): Promise<number[]> {
  const e = new TfjsEngine(model, adapter(), { baseModel: 'tiny', microBatchSize: 2, grammars: EVERY_GRAMMAR });
  await contractForwardBackward(e, b, { ...step, extensions });
  const g = e.gradients()!.flatMap((t) => Array.from(t.dataSync()));
  e.dispose();
  return g;
}

describe('constrained turns through the contract', () => {
  it("the engine replays each datum's constraint: the gradient equals trainStep's under the replayed masks (1e-6); raw scoring does not", async () => {
    const a = adapter();
    const acc = accumulateGradients(loraPolicy(model, a), batch, { microBatchSize: 2, grpo, prefixGrouping: true });
    const ref = acc.grads.flatMap((t) => Array.from(t.dataSync()));
    tf.dispose(acc.grads);
    a.dispose();
    expect(norm(ref)).toBeGreaterThan(1e-4);
    expect(rel(await contract(batch, true), ref)).toBeLessThan(1e-6);
    // without gsteer's extensions (a plain Tinker datum): the raw softmax, another gradient
    expect(rel(await contract(batch, false), ref)).toBeGreaterThan(1e-3);
  }, 180_000);
});
