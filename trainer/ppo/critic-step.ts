// One critic update (method §13): the clipped value loss (critic.ts) summed over micro-batches
// (each normalised by the whole batch's token count, so the sum is the full-batch loss and
// gradient), the global gradient norm clipped, one AdamW step at the critic's learning rate.
import * as tf from '@tensorflow/tfjs';
import type { Qwen3Model } from '../../model/model.ts';
import type { AdamW } from '../optim/adamw.ts';
import { clipGradNorm } from '../optim/clip.ts';
import { microBatches, padRows, sumRows } from '../step-batch.ts';
import { clippedValueLossTf, criticValues, type Critic } from './critic.ts';

export interface CriticBatch {
  inputIds: number[][]; // [B][T_b]
  mask: number[][]; // [B][T_b] 1 on response (policy) tokens
  oldValues: number[][]; // [B][T_b] the critic's values when the returns were computed
  returns: number[][]; // [B][T_b] G from GAE
}

export interface CriticStepOptions {
  lr: number;
  microBatchSize: number;
  maxGradNorm: number;
  cliprangeValue: number;
  recompute?: boolean;
}

export interface CriticStats {
  vf_loss: number;
  vf_clipfrac: number;
  grad_norm: number;
  /** 1: the value loss or grad norm was not finite, no step taken. */
  nonfinite_skipped: number;
}

export function criticStep(model: Qwen3Model, critic: Critic, optimizer: AdamW, batch: CriticBatch, o: CriticStepOptions): CriticStats {
  const vars = critic.variables();
  const tokens = sumRows(batch.mask);
  let acc: tf.Tensor[] | null = null;
  let loss = 0;
  let clipped = 0;
  for (const idx of microBatches(batch.inputIds.length, o.microBatchSize)) {
    const t2 = (rows: number[][]) => tf.tensor2d(padRows(rows, idx, 0), undefined, 'float32');
    const ids = idx.map((b) => batch.inputIds[b]!);
    const mask = t2(batch.mask);
    const oldV = t2(batch.oldValues);
    const ret = t2(batch.returns);
    let c = 0;
    const { value, grads } = tf.variableGrads(() => {
      const v = criticValues(
        model,
        critic,
        ids,
        idx.map((b) => batch.mask[b]!),
        { training: true, recompute: o.recompute ?? false },
      );
      const r = clippedValueLossTf(v, oldV, ret, mask, o.cliprangeValue, tokens);
      c = r.clipped.dataSync()[0]!;
      r.clipped.dispose();
      return r.loss;
    }, vars);
    loss += value.dataSync()[0]!;
    clipped += c;
    const g = vars.map((v) => grads[v.name] ?? tf.zerosLike(v));
    const prev = acc as tf.Tensor[] | null;
    acc = prev ? prev.map((a: tf.Tensor, i: number) => tf.add(a, g[i]!)) : g;
    if (prev) tf.dispose([...prev, ...g]);
    tf.dispose([value, mask, oldV, ret]);
  }
  const all = (acc as tf.Tensor[] | null) ?? vars.map((v) => tf.zerosLike(v));
  const clip = clipGradNorm(all, o.maxGradNorm);
  // a NaN / infinite loss or grad norm takes no step (as trainer/step.ts)
  const finite = Number.isFinite(loss) && Number.isFinite(clip.norm);
  if (finite) optimizer.step(clip.grads, o.lr);
  tf.dispose([...all, ...clip.grads]);
  return { vf_loss: loss, vf_clipfrac: tokens ? clipped / tokens : 0, grad_norm: clip.norm, nonfinite_skipped: finite ? 0 : 1 };
}

/** Values [B][T_b] without gradients (dropout off), in micro-batches: V_old for GAE. */
export function scoreValues(model: Qwen3Model, critic: Critic, inputIds: number[][], mask: number[][], microBatchSize: number): number[][] {
  const out: number[][] = [];
  for (const idx of microBatches(inputIds.length, microBatchSize)) {
    const ids = idx.map((b) => inputIds[b]!);
    const v = tf.tidy(() =>
      criticValues(
        model,
        critic,
        ids,
        idx.map((b) => mask[b]!),
      ).arraySync(),
    );
    ids.forEach((seq, i) => out.push(v[i]!.slice(0, seq.length)));
  }
  return out;
}
