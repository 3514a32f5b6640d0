// One optimizer update (method §5 GRPO, §7 SFT): split the batch into micro-batches, sum their
// gradients (each micro-batch loss is divided by the *whole* batch's normalizers, so the sum
// is the full-batch gradient for every loss type), clip the global norm, take an AdamW step.
// A loss or gradient norm that is not finite skips the step (variables and optimizer state
// untouched, `nonfinite_skipped` 1 in the metrics): one NaN would otherwise reach every
// weight and moment of the adapter.
import * as tf from '@tensorflow/tfjs';
import type { AdamW } from './optim/adamw.ts';
import { clipGradNorm } from './optim/clip.ts';
import type { Policy } from './policy.ts';
import { checkAligned, microBatches, sumRows } from './step-batch.ts';
import { lossRows, microLoss, type PolicyBatch, type MicroOptions, type SftBatch } from './step-loss.ts';
import { ZERO_SUMS, addSums, grpoStatMeans, type GrpoTokenSums } from './grpo/stats.ts';
import { lossUnits } from './grpo/loss-units.ts';
import { prefixOrder } from '../model/prefix-tree.ts';
import { InputError } from '../util/errors.ts';

export type { PolicyBatch, SftBatch } from './step-loss.ts';
export type TrainBatch = PolicyBatch | SftBatch;

export interface StepOptions extends Omit<MicroOptions, 'normalizer'> {
  lr: number;
  microBatchSize: number; // GrpoConfig.microBatchSize
  maxGradNorm: number; // GrpoConfig.maxGradNorm
}

export interface StepMetrics {
  loss: number;
  grad_norm: number; // before clipping (TRL)
  learning_rate: number;
  num_tokens: number; // every real token scored (prompt + completion)
  loss_tokens: number; // tokens carrying loss (policy tokens / SFT targets)
  nonfinite_skipped: number; // 1: the loss or gradient norm was NaN / infinite, no step taken
  tokens_per_second: number; // num_tokens / step time (forward + backward + update)
  step_time_s: number;
  micro_batches: number;
  [stat: string]: number; // clip_ratio/*, approx_kl, kl, entropy (GRPO)
}

function validate(batch: TrainBatch, o: Pick<StepOptions, 'grpo'>): void {
  if (batch.inputIds.length === 0) throw new InputError('train batch: no sequences; an update needs at least one');
  if (batch.kind === 'policy') {
    if (batch.advantages.length !== batch.inputIds.length)
      throw new InputError(`train batch: ${batch.advantages.length} advantages for ${batch.inputIds.length} sequences; one advantage per trajectory`);
    const { completionMask, oldLogprobs, rolloutLogprobs, refLogprobs, tokenAdvantages } = batch;
    checkAligned(batch.inputIds, { completionMask, oldLogprobs, rolloutLogprobs, refLogprobs, tokenAdvantages });
    if (batch.masks && batch.masks.length !== batch.inputIds.length)
      throw new InputError(`train batch: ${batch.masks.length} token-mask entries for ${batch.inputIds.length} sequences; one (or null) per sequence`);
    if (!o.grpo) throw new Error('internal: trainStep got a policy batch without StepOptions.grpo');
    if (o.grpo.tisCap !== null && !rolloutLogprobs)
      throw new InputError(
        `train batch: grpo.tisCap is ${o.grpo.tisCap} but the batch has no rolloutLogprobs; keep the server's logprobs in the trajectories or set grpo.tisCap=null`,
      );
    if (o.grpo.betaKl > 0 && !refLogprobs)
      throw new InputError(
        `train batch: grpo.betaKl is ${o.grpo.betaKl} but the batch has no refLogprobs; score the batch under the base model (no adapter) first or set grpo.betaKl=0`,
      );
  } else checkAligned(batch.inputIds, { targetMask: batch.targetMask });
}

export interface Accumulated {
  grads: tf.Tensor[]; // aligned with policy.variables(); the caller disposes them
  loss: number;
  sums: GrpoTokenSums;
  microBatches: number;
  lossTokens: number;
}

/**
 * Which rows of micro-batch `idx` get a backward (`active`) and which are only scored without
 * a tape, for the loss and diagnostics (`idle`, whose gradient must be 0).
 */
export type RowSplit = (batch: TrainBatch, idx: number[], o: Omit<StepOptions, 'lr' | 'maxGradNorm'>) => { active: number[]; idle: number[] };

/**
 * The default RowSplit. With betaKl = 0 a GRPO row whose advantage is exactly 0 has per-token
 * loss -min(rho * 0, clip(rho) * 0) = 0 (times any TIS weight), so its gradient is 0: it is
 * scored without a tape, for the diagnostics only. The normalizers stay those of the whole
 * batch, so the other rows' loss is unchanged.
 */
export const splitIdle: RowSplit = (batch, idx, o) => {
  if (batch.kind !== 'policy' || batch.tokenAdvantages || !o.grpo || o.grpo.betaKl !== 0) return { active: idx, idle: [] };
  return { active: idx.filter((b) => batch.advantages[b] !== 0), idle: idx.filter((b) => batch.advantages[b] === 0) };
};

/**
 * Sum of the micro-batch gradients = the gradient of the full-batch loss. `split` chooses the
 * rows that get a backward (default `splitIdle`; any split whose idle rows have zero gradient
 * gives the same result, e.g. every row active).
 */
export function accumulateGradients(policy: Policy, batch: TrainBatch, o: Omit<StepOptions, 'lr' | 'maxGradNorm'>, split: RowSplit = splitIdle): Accumulated {
  validate(batch, o);
  const vars = policy.variables();
  const rowTokens = lossRows(batch).map((r) => sumRows([r]));
  const units = batch.kind === 'policy' ? lossUnits(rowTokens, o.grpo?.aggregation ?? 'turn', batch.trajectories) : null;
  const normalizer = { sequences: units ? units.units : batch.inputIds.length, tokens: rowTokens.reduce((s, n) => s + n, 0) };
  const order = o.prefixGrouping ? prefixOrder(batch.inputIds) : null;
  const parts = microBatches(batch.inputIds.length, o.microBatchSize).map((idx) => (order ? idx.map((i) => order[i]!) : idx));
  let acc: tf.Tensor[] | null = null;
  let loss = 0;
  let sums: GrpoTokenSums = ZERO_SUMS;
  parts.forEach((idx, k) => {
    const dropoutSeed = o.dropoutSeed === undefined ? undefined : o.dropoutSeed + k;
    const mo = { ...o, normalizer, dropoutSeed, ...(units ? { unitTokens: units.unitTokens } : {}) };
    const { active, idle } = split(batch, idx, o);
    if (idle.length > 0) {
      let idleSums: GrpoTokenSums = ZERO_SUMS;
      const idleLoss = tf.tidy(() => {
        const m = microLoss(policy, batch, idle, mo);
        idleSums = m.sums;
        return m.loss;
      });
      loss += idleLoss.dataSync()[0]!; // 0: kept so the reported loss is the same sum
      idleLoss.dispose();
      sums = addSums(sums, idleSums);
    }
    if (active.length === 0) return;
    let partSums: GrpoTokenSums = ZERO_SUMS;
    const { value, grads } = tf.variableGrads(() => {
      const r = microLoss(policy, batch, active, mo);
      partSums = r.sums;
      return r.loss;
    }, vars);
    loss += value.dataSync()[0]!;
    sums = addSums(sums, partSums);
    // a variable the loss does not reach (no loss token in the part) has no entry
    const g = vars.map((v) => grads[v.name] ?? tf.zerosLike(v));
    const prev: tf.Tensor[] | null = acc;
    acc = prev ? prev.map((a, i) => tf.add(a, g[i]!)) : g;
    if (prev) tf.dispose([...prev, ...g]);
    tf.dispose(value);
  });
  return { grads: acc ?? vars.map((v) => tf.zerosLike(v)), loss, sums, microBatches: parts.length, lossTokens: normalizer.tokens };
}

/** One update; no tensors survive it except the updated variables and optimizer state. */
export function trainStep(policy: Policy, optimizer: AdamW, batch: TrainBatch, o: StepOptions): StepMetrics {
  const t0 = performance.now();
  const acc = accumulateGradients(policy, batch, o);
  const clipped = clipGradNorm(acc.grads, o.maxGradNorm);
  const finite = Number.isFinite(acc.loss) && Number.isFinite(clipped.norm);
  if (finite) optimizer.step(clipped.grads, o.lr);
  tf.dispose([...acc.grads, ...clipped.grads]);
  const seconds = (performance.now() - t0) / 1000;
  const numTokens = batch.inputIds.reduce((s, r) => s + r.length, 0);
  return {
    loss: acc.loss,
    grad_norm: clipped.norm,
    learning_rate: o.lr,
    num_tokens: numTokens,
    loss_tokens: acc.lossTokens,
    nonfinite_skipped: finite ? 0 : 1,
    tokens_per_second: numTokens / seconds,
    step_time_s: seconds,
    micro_batches: acc.microBatches,
    ...(batch.kind === 'policy' ? grpoStatMeans(acc.sums) : {}),
  };
}
