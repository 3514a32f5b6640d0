// The pretraining objective (trainer/pretrain/pretrain.ts): full-weight causal-LM token
// cross-entropy over a trainable, untied lm_head, masked to the target tokens (method §7's
// SFT loss, applied to the base weights instead of a LoRA).
import * as tf from '@tensorflow/tfjs';
import type { Qwen3Model } from '../../model/model.ts';
import { runStack } from '../../model/stack.ts';

/**
 * Per-row cross-entropy lse(logits) - logits[target] for logits [N, V] and fixed targets
 * [N] (rows), with gradient dy * (softmax - onehot). Written by hand because the wasm
 * backend has no gather gradient and tf.logSumExp differentiates through its max.
 */
export function rowCrossEntropy(logits: tf.Tensor2D, targets: Int32Array): tf.Tensor1D {
  const [N, V] = logits.shape;
  const flat = Int32Array.from(targets, (t, n) => n * V + t); // index of logits[n, t] in the flat [N*V] view
  const f = tf.customGrad((...args: unknown[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const x = args[0] as tf.Tensor2D;
    const mx = tf.max(x, -1, true); // [N, 1]
    const lse = tf.add(tf.log(tf.sum(tf.exp(tf.sub(x, mx)), -1)), tf.reshape(mx, [-1])); // [N]
    const picked = tf.gather(tf.reshape(x, [N * V]), tf.tensor1d(flat, 'int32')); // [N]
    save([x, lse]);
    return {
      value: tf.sub(lse, picked) as tf.Tensor1D,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
        const [sx, slse] = saved as [tf.Tensor2D, tf.Tensor1D];
        const p = tf.exp(tf.sub(sx, tf.expandDims(slse, -1))); // softmax [N, V]
        // int32 then cast: wasm's oneHot with dtype float32 writes the int bit pattern (1 -> 1.4e-45)
        const onehot = tf.cast(tf.oneHot(tf.tensor1d(targets, 'int32'), V), 'float32'); // [N, V]
        return [tf.mul(tf.sub(p, onehot), tf.expandDims(dy as tf.Tensor, -1))];
      },
    };
  }) as (x: tf.Tensor2D) => tf.Tensor1D;
  return f(logits);
}

/** A right-padded batch of embedding rows and per-token loss weights. */
export interface PretrainBatch {
  rows: Int32Array; // [B*T] embedding rows
  weights: Float32Array; // [B*(T-1)]: weight of predicting token t+1 at position t (0 = no loss)
  B: number;
  T: number;
  /** First position with a non-zero weight in any row: the head runs on positions from..T-2 only. */
  from: number;
}

/**
 * Weighted token cross-entropy sum_t w_t * CE_t (the weights carry 1/#target tokens, so
 * this is the mean over target tokens). The model's lmHeadT must be untied from the
 * embedding; the embedding is read by a gather and gets no gradient. The head (the widest
 * matmul, [D, V]) runs only on positions from..T-2, where the targets are: prompt positions
 * carry weight 0 and would add exact zeros (1.25x per update on the demo's examples,
 * bench/trainer/pretrain-head.ts).
 */
export function pretrainLoss(model: Qwen3Model, b: PretrainBatch): tf.Scalar {
  return tf.tidy(() => {
    const { B, T, from } = b;
    const D = model.config.hiddenSize;
    const L = T - 1 - from; // positions that predict a token
    const h = runStack(model, null, tf.tensor2d(b.rows, [B, T], 'int32'), {}); // [B*T, D]
    const hp = tf.reshape(tf.slice(tf.reshape(h, [B, T, D]), [0, from, 0], [B, L, D]), [B * L, D]) as tf.Tensor2D; // [N = B*L, D]
    const targets = new Int32Array(B * L);
    const weights = new Float32Array(B * L);
    for (let i = 0; i < B; i++) {
      targets.set(b.rows.subarray(i * T + from + 1, (i + 1) * T), i * L); // position t predicts token t+1
      weights.set(b.weights.subarray(i * (T - 1) + from, (i + 1) * (T - 1)), i * L);
    }
    const logits = tf.matMul(hp, model.weights.lmHeadT) as tf.Tensor2D; // [N, rows]
    const ce = rowCrossEntropy(logits, targets); // [N]
    return tf.sum(tf.mul(ce, tf.tensor1d(weights))) as tf.Scalar;
  });
}
