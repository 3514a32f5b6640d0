// Prefix-grouped training (method §5.11) against the current path on cpu and wasm: per-token
// logprobs of every scored token, the loss, every GRPO metric and every gradient within 1e-5,
// with constrained turns, TIS, KL, recompute and both loss aggregations; and a prefix tree
// misaligned by one token, which must make them differ.
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../model/backend.ts';
import { accumulateGradients, type PolicyBatch } from '../../trainer/step.ts';
import type { GrpoLossOptions, LossAggregation } from '../../trainer/grpo/loss.ts';
import { createLora } from '../../model/lora/lora.ts';
import { loraPolicy, scoreRows } from '../../trainer/policy-lora.ts';
import type { Policy } from '../../trainer/policy.ts';
import { LoraSchema } from '../../configs/schema.ts';
import type { Qwen3Config } from '../../model/config.ts';
import type { Qwen3Model } from '../../model/model.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import type { TokenMasks } from '../../model/token-masks.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import { treeLogprobs } from '../../model/prefix-logprobs.ts';
import { buildPrefixTree } from '../../model/prefix-tree.ts';
import { randomQwen3 } from './step-fixtures.ts';
import { grpoStatMeans } from '../../trainer/grpo/stats.ts';
import { Rng } from '../../util/rng.ts';

const cfg: Qwen3Config = {
  vocabSize: 48,
  hiddenSize: 32,
  intermediateSize: 64,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 128,
};

// One update as the trainer sees it: a group of 3 trajectories of 2 turns. Every turn starts
// with the same system prompt S; the first turns share the whole prompt S + Q; the second
// turns' prompts repeat their own first turn and add an observation. Plus a sequence that is
// a strict prefix of another's prompt region and one of length 2.
const rng = new Rng(5);
const toks = (n: number) => Array.from({ length: n }, () => 1 + rng.int(cfg.vocabSize - 1));
const S = toks(9);
const Q = toks(4);
const rows: { prompt: number[]; completion: number[]; trajectory: number }[] = [];
for (let i = 0; i < 3; i++) {
  const c0 = toks(4 + i);
  rows.push({ prompt: [...S, ...Q], completion: c0, trajectory: i });
  rows.push({ prompt: [...S, ...Q, ...c0, ...toks(3)], completion: toks(3 + i), trajectory: i });
}
rows.push({ prompt: S.slice(0, 6), completion: toks(2), trajectory: 3 });
rows.push({ prompt: [S[0]!], completion: toks(1), trajectory: 4 });
const inputIds = rows.map((r) => [...r.prompt, ...r.completion]);
const completionMask = rows.map((r) => [...r.prompt.map(() => 0), ...r.completion.map(() => 1)]);
const advantages = [1.1, -0.6, 0.4, -1.3, 0.9, 0, 0.7, -0.2];
const jitter = () => inputIds.map((s) => s.map((_, t) => (t === 0 ? 0 : -Math.log(cfg.vocabSize) + (rng.next() - 0.5))));
const oldLogprobs = jitter();
const rolloutLogprobs = jitter();

/** Constrained turns: rows 1 and 4 sampled under masks allowing about half the ids (and the sampled one). */
function masksFor(): (TokenMasks | null)[] {
  return inputIds.map((seq, b) => {
    if (b !== 1 && b !== 4) return null;
    const table = [0, 1].map(() => {
      const m = new Int32Array(Math.ceil(cfg.vocabSize / 32)).map(() => rng.int(2 ** 31));
      for (let t = rows[b]!.prompt.length; t < seq.length; t++) m[seq[t]! >> 5]! |= 1 << (seq[t]! & 31);
      return m;
    });
    return { table, index: seq.map((_, t) => (t < rows[b]!.prompt.length ? -1 : t % 2)) };
  });
}
const masks = masksFor();

const maxDiff = (a: tf.Tensor[], b: tf.Tensor[]) => Math.max(...a.map((t, i) => tf.tidy(() => tf.max(tf.abs(tf.sub(t, b[i]!))).dataSync()[0]!)));

for (const backend of ['cpu', 'wasm'] as const) {
  describe(`prefix-grouped training on ${backend}`, () => {
    let model: Qwen3Model;
    let adapter: LoraAdapter;
    let policy: Policy;
    beforeAll(async () => {
      await selectBackend(backend, () => {});
      model = randomQwen3(cfg, 11);
      adapter = createLora(model, LoraSchema.parse({ dropout: 0 }), 3);
      const r = new Rng(4);
      for (const v of adapter.variables())
        if (v.name.endsWith('lora_B'))
          v.assign(
            tf.tensor(
              Float32Array.from({ length: v.size }, () => r.normal() * 0.05),
              v.shape,
            ),
          );
      policy = loraPolicy(model, adapter);
    });
    afterAll(() => {
      adapter.dispose();
      model.dispose();
    });

    it('a group shares its first-turn prompt and every turn the system prompt: computed once', () => {
      const tree = buildPrefixTree(inputIds);
      const total = inputIds.reduce((s, q) => s + q.length, 0);
      expect(tree.rows).toBeLessThan(total);
      // S[0] is a root shared by all 8; the 3 first turns share S + Q + nothing more
      expect(tree.nodes.filter((n) => n.parent === -1)).toHaveLength(1);
      const firstTurns = [0, 2, 4].map((b) => tree.rowOf[b]!);
      for (let t = 0; t < S.length + Q.length; t++) expect(new Set(firstTurns.map((rw) => rw[t])).size).toBe(1);
      expect(new Set(firstTurns.map((rw) => rw[S.length + Q.length])).size).toBe(3);
    });

    it('per-token logprobs and entropy of every scored token equal the padded path (1e-5)', () => {
      const scored = completionMask;
      for (const recompute of [false, true]) {
        const o = { training: true, recompute, withEntropy: true };
        const want = tokenLogprobs(model, adapter, { inputIds, masks, scored }, o);
        const got = treeLogprobs(model, adapter, { inputIds, masks, scored }, o);
        // and the [N, V] mask bias built by a gather (the backend default here may be the one-hot matmul), for both
        const ref = tokenLogprobs(model, adapter, { inputIds, masks, scored }, { ...o, maskPath: 'gather' as const });
        const refTree = treeLogprobs(model, adapter, { inputIds, masks, scored }, { ...o, maskPath: 'gather' as const });
        const d = maxDiff([want.logprobs, want.entropy!, ref.logprobs, ref.entropy!], [got.logprobs, got.entropy!, refTree.logprobs, refTree.entropy!]);
        expect(maxDiff([ref.logprobs], [got.logprobs])).toBeLessThan(1e-5);
        tf.dispose([ref.logprobs, ref.entropy!, refTree.logprobs, refTree.entropy!]);
        console.info(`${backend} recompute=${recompute}: max |logprob / entropy difference| ${d.toExponential(2)}`);
        expect(d).toBeLessThan(1e-5);
        tf.dispose([want.logprobs, want.entropy!, got.logprobs, got.entropy!]);
      }
    });

    const cases: { name: string; grpo: Omit<GrpoLossOptions, 'normalizer'>; batch: PolicyBatch; recompute: boolean }[] = [];
    const base: PolicyBatch = { kind: 'policy', inputIds, completionMask, advantages, trajectories: rows.map((x) => x.trajectory), masks };
    for (const aggregation of ['trajectory', 'turn'] as LossAggregation[]) {
      const g = { lossType: 'grpo' as const, aggregation, epsilon: 0.2, betaKl: 0, tisCap: null, maxCompletionLength: 16 };
      cases.push({ name: `${aggregation}, off-policy (clipping)`, grpo: g, batch: { ...base, oldLogprobs }, recompute: false });
      cases.push({
        name: `${aggregation}, TIS + KL + recompute`,
        grpo: { ...g, tisCap: 2, betaKl: 0.05 },
        batch: { ...base, oldLogprobs, rolloutLogprobs, refLogprobs: jitter() },
        recompute: true,
      });
      cases.push({ name: `${aggregation}, on-policy dr_grpo`, grpo: { ...g, lossType: 'dr_grpo' }, batch: base, recompute: false });
    }
    for (const c of cases)
      it(`loss, metrics and gradients equal the current path: ${c.name}`, () => {
        for (const microBatchSize of [8, 3]) {
          const o = { microBatchSize, grpo: c.grpo, withEntropy: true, recompute: c.recompute };
          const want = accumulateGradients(policy, c.batch, o);
          const got = accumulateGradients(policy, c.batch, { ...o, prefixGrouping: true });
          const gradDiff = maxDiff(want.grads, got.grads);
          // the logged metrics (means over the update's policy tokens, as trainStep reports them)
          const [m1, m2] = [grpoStatMeans(want.sums), grpoStatMeans(got.sums)];
          const metricDiff = Math.max(Math.abs(want.loss - got.loss), ...Object.keys(m1).map((k) => Math.abs(m1[k]! - m2[k]!)));
          console.info(
            `${backend} ${c.name} micro-batch ${microBatchSize}: max |gradient difference| ${gradDiff.toExponential(2)}, max |loss / metric difference| ${metricDiff.toExponential(2)}`,
          );
          expect(gradDiff).toBeLessThan(1e-5);
          expect(metricDiff).toBeLessThan(1e-5);
          expect(Math.max(...want.grads.map((t) => tf.tidy(() => tf.max(tf.abs(t)).dataSync()[0]!)))).toBeGreaterThan(1e-4); // a real gradient
          expect(got.sums.tokens).toBe(want.sums.tokens);
          tf.dispose([...want.grads, ...got.grads]);
        }
      });

    it('a prefix tree misaligned by one token makes the logprobs, loss and gradients differ', () => {
      // The tree claims the second first-turn shares one more token with the first (its first completion token).
      const misaligned = (ids: number[][]) => {
        const bad = ids.map((s) => [...s]);
        const a = bad[0]!;
        const b = bad[1]!;
        let p = 0;
        while (a[p] === b[p]) p++;
        b[p] = a[p]!;
        return buildPrefixTree(bad);
      };
      const firstTurns = [0, 2].map((b) => inputIds[b]!);
      const o = { training: true, recompute: false, withEntropy: false };
      const want = tokenLogprobs(model, adapter, { inputIds: firstTurns }, o);
      const got = treeLogprobs(model, adapter, { inputIds: firstTurns }, o, misaligned(firstTurns));
      const d = maxDiff([want.logprobs], [got.logprobs]);
      console.info(`${backend} misaligned tree: max |logprob difference| ${d.toExponential(2)}`);
      expect(d).toBeGreaterThan(1e-3);
      tf.dispose([want.logprobs, got.logprobs]);
      const bad: Policy = {
        variables: () => adapter.variables(),
        score: (ids, so, m) => treeLogprobs(model, adapter, { inputIds: ids, masks: m, scored: so.scored }, so, misaligned(ids)),
      };
      const batch: PolicyBatch = {
        kind: 'policy',
        inputIds: [inputIds[0]!, inputIds[2]!],
        completionMask: [completionMask[0]!, completionMask[2]!],
        advantages: [1, -1],
        trajectories: [0, 1],
      };
      const grpo = { lossType: 'grpo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
      const right = accumulateGradients(policy, batch, { microBatchSize: 2, grpo, prefixGrouping: true });
      const wrong = accumulateGradients(bad, batch, { microBatchSize: 2, grpo, prefixGrouping: true });
      const gd = maxDiff(right.grads, wrong.grads);
      console.info(`${backend} misaligned tree: max |gradient difference| ${gd.toExponential(2)}`);
      expect(gd).toBeGreaterThan(1e-5);
      tf.dispose([...right.grads, ...wrong.grads]);
    });

    it('scoreRows over the tree gives the old / reference logprobs of the padded path', () => {
      const a = scoreRows(model, adapter, inputIds, 3, masks);
      const b = scoreRows(model, adapter, inputIds, 3, masks, true);
      const d = Math.max(...a.flatMap((row, i) => row.map((x, t) => Math.abs(x - b[i]![t]!))));
      expect(d).toBeLessThan(1e-5);
    });
  });
}
