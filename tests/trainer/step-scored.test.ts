// Issue 17: the train step scores only the loss tokens (lm_head + log-softmax over the
// completion/target positions, with the grammar-mask bias gathered at the same positions)
// and skips the backward of zero-advantage rows when betaKl = 0. Both must give the update
// of the full path (bench/trainer/full-path.ts: the pre-issue-17 step, shared with the bench)
// within 1e-5: gradients, loss and every diagnostic, on cpu and on wasm (whose gather has
// no gradient kernel: fused.ts gatherRows/scatterRows).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { accumulateGradients, type PolicyBatch, type SftBatch, type TrainBatch } from '../../trainer/step.ts';
import { createLora } from '../../model/lora/lora.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import type { TokenMasks } from '../../model/token-masks.ts';
import type { Qwen3Config } from '../../model/config.ts';
import type { LossType } from '../../trainer/grpo/loss.ts';
import { selectBackend } from '../../model/backend.ts';
import { LoraSchema } from '../../configs/schema.ts';
import { Rng } from '../../util/rng.ts';
import { fullPathGradients } from '../../bench/trainer/full-path.ts';
import { randomQwen3 } from './step-fixtures.ts';

const cfgOf = (tied: boolean): Qwen3Config => ({
  vocabSize: 96,
  hiddenSize: 32,
  intermediateSize: 64,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: tied,
  maxPositionEmbeddings: 128,
});

const rng = new Rng(17);
const lens = [9, 6, 11, 8, 7, 10];
const V = 96;
const inputIds = lens.map((n) => Array.from({ length: n }, () => rng.int(V)));
// multi-turn: two completion segments per row, different offsets per row
const completionMask = lens.map((n, b) => Array.from({ length: n }, (_, t) => ((t >= 2 + (b % 2) && t < 5) || t >= n - 2 ? 1 : 0)));
const advantages = [1.2, 0, -0.7, 0, 0.4, -1];

/** Rows 0, 3 and 4 constrained: one mask per segment, each holding the sampled tokens. */
function tokenMasks(): (TokenMasks | null)[] {
  const r = new Rng(5);
  return inputIds.map((ids, b) => {
    if (![0, 3, 4].includes(b)) return null;
    const table = [0, 1].map(() => {
      const m = new Int32Array(Math.ceil(V / 32));
      for (let v = 0; v < V; v++) if (r.next() < 0.3) m[v >> 5]! |= 1 << (v & 31);
      for (const id of ids) m[id >> 5]! |= 1 << (id & 31);
      return m;
    });
    return { table, index: ids.map((_, t) => (completionMask[b]![t] ? (t < 5 ? 0 : 1) : -1)) };
  });
}

function adapter(model: ReturnType<typeof randomQwen3>, dropout: number) {
  const a = createLora(model, LoraSchema.parse({ dropout }), 3);
  const r = new Rng(4);
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

const maxDiff = (a: tf.Tensor[], b: tf.Tensor[]) => Math.max(...a.map((t, i) => tf.tidy(() => tf.max(tf.abs(tf.sub(t, b[i]!))).dataSync()[0]!)));

interface Case {
  name: string;
  tied: boolean;
  batch: TrainBatch;
  lossType?: LossType;
  betaKl?: number;
  tisCap?: number | null;
  dropout?: number;
  recompute?: boolean;
  microBatchSize: number;
}

const grpo = (extra: Partial<PolicyBatch> = {}): PolicyBatch => ({ kind: 'policy', inputIds, completionMask, advantages, ...extra });
const near = (rows: number[][], d: number) => rows.map((r) => r.map((x) => x - d));
const sft: SftBatch = { kind: 'sft', inputIds, targetMask: completionMask };

const CASES: Case[] = [
  { name: 'unmasked rows, A=0 rows skipped, untied head', tied: false, batch: grpo(), microBatchSize: 2 },
  { name: 'masked and unmasked rows, tied head, dapo', tied: true, batch: grpo({ masks: tokenMasks() }), lossType: 'dapo', microBatchSize: 3 },
  {
    name: 'masked rows, dr_grpo, TIS, off-policy old logprobs',
    tied: false,
    batch: grpo({ masks: tokenMasks() }),
    lossType: 'dr_grpo',
    tisCap: 2,
    microBatchSize: 4,
    recompute: true,
  },
  { name: 'betaKl > 0 (A=0 rows keep their backward)', tied: true, batch: grpo({ masks: tokenMasks() }), betaKl: 0.05, microBatchSize: 2 },
  { name: 'a micro-batch of only A=0 rows', tied: false, batch: grpo({ advantages: [0, 0, 1, -1, 0, 0] }), lossType: 'bnpo', microBatchSize: 2 },
  {
    name: 'LoRA dropout on, no A=0 rows (same masks)',
    tied: true,
    batch: grpo({ advantages: [1, -1, 0.5, -0.5, 2, -2], masks: tokenMasks() }),
    dropout: 0.1,
    microBatchSize: 3,
  },
  { name: 'SFT targets', tied: false, batch: sft, microBatchSize: 4 },
];

for (const backend of ['cpu', 'wasm'] as const) {
  describe(`scored positions and skipped A=0 rows equal the full path (${backend})`, () => {
    const models = new Map<boolean, ReturnType<typeof randomQwen3>>();
    beforeAll(async () => {
      await selectBackend(backend, () => {});
      models.set(false, randomQwen3(cfgOf(false), 11));
      models.set(true, randomQwen3(cfgOf(true), 12));
    });
    afterAll(() => models.forEach((m) => m.dispose()));

    for (const c of CASES) {
      it(c.name, () => {
        const model = models.get(c.tied)!;
        const a = adapter(model, c.dropout ?? 0);
        const p = loraPolicy(model, a);
        const lp = (o: number) =>
          tf.tidy(() => tokenLogprobs(model, null, { inputIds }).logprobs.arraySync()).map((r, b) => r.slice(0, lens[b]).map((x) => x - o));
        const batch: TrainBatch = c.batch.kind === 'policy' && c.tisCap ? { ...c.batch, oldLogprobs: lp(0.05), rolloutLogprobs: near(lp(0), 0.1) } : c.batch;
        const withRef: TrainBatch = batch.kind === 'policy' && c.betaKl ? { ...batch, refLogprobs: lp(0.02) } : batch;
        const g = { lossType: c.lossType ?? 'grpo', epsilon: 0.2, betaKl: c.betaKl ?? 0, tisCap: c.tisCap ?? null, maxCompletionLength: 16 };
        const o = { microBatchSize: c.microBatchSize, grpo: g, dropoutSeed: 7, recompute: c.recompute ?? false, withEntropy: true };
        const before = tf.memory().numTensors;
        const full = fullPathGradients(p, withRef, o);
        const fast = accumulateGradients(p, withRef, o);
        expect(maxDiff(full.grads, fast.grads)).toBeLessThan(1e-5);
        expect(Math.max(...full.grads.map((t) => tf.tidy(() => tf.max(tf.abs(t)).dataSync()[0]!)))).toBeGreaterThan(1e-4);
        expect(fast.loss).toBeCloseTo(full.loss, 5);
        for (const k of Object.keys(full.sums) as (keyof typeof full.sums)[]) expect(fast.sums[k], k).toBeCloseTo(full.sums[k], 4);
        tf.dispose([...full.grads, ...fast.grads]);
        expect(tf.memory().numTensors).toBe(before);
        a.dispose();
      });
    }

    it('tokenLogprobs with `scored` equals the full scores on the scored columns and is 0 elsewhere', () => {
      const model = models.get(true)!;
      const masks = tokenMasks();
      const pad = (r: number[]) => [...r, ...new Array<number>(11 - r.length).fill(0)];
      const [full, part] = [undefined, completionMask].map((scored) =>
        tf.tidy(() => {
          const r = tokenLogprobs(model, null, { inputIds, masks, scored }, { withEntropy: true });
          return [r.logprobs.arraySync(), r.entropy!.arraySync()];
        }),
      );
      for (const k of [0, 1])
        part![k]!.forEach((row, b) =>
          row.forEach((x, t) => {
            if (pad(completionMask[b]!)[t] && t > 0) expect(Math.abs(x - full![k]![b]![t]!)).toBeLessThan(1e-5);
            else expect(x).toBe(0);
          }),
        );
    });
  });
}
