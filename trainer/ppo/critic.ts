// The critic of PPO (method §13): a value head on the final hidden state of the policy's base
// model, with its own LoRA adapter (same rank, alpha and targets as the actor's, its own seed)
// and its own optimizer and learning rate. The base weights are shared and frozen, so the
// critic costs one more forward/backward of the same model and a few thousand parameters,
// not a second model; its gradients never touch the actor's adapter (verl and OpenRLHF also
// train a separate critic initialised from the policy).
//   V(s_t) = w . h_{t-1} + b      h = runStack(base + critic LoRA), final RMSNorm   w: [D, 1], b: [1]
// Column t of the values is the value of the state *before* token t is emitted, predicted
// from the hidden state of position t-1, the same alignment as the logprobs (verl:
// values = critic(...)[:, -response_length - 1 : -1]); column 0 is 0.
// The clipped value loss (value-loss.ts, here in tfjs for the gradient), token-mean over the
// whole batch so micro-batches sum to the full-batch loss:
//   V_clip = V_old + clip(V - V_old, -eps_v, eps_v)
//   L      = 0.5 * sum_t m_t * max((V - G)^2, (V_clip - G)^2) / N_tokens
import * as tf from '@tensorflow/tfjs';
import type { LoraConfig } from '../../configs/schema.ts';
import { gatherRows, scatterRows } from '../../model/fused.ts';
import { createLora } from '../../model/lora/index.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import type { Qwen3Model } from '../../model/model.ts';
import { runStack, type StackOptions } from '../../model/stack.ts';
import { idsToRows } from '../../model/vocab-map.ts';
import { Rng } from '../../util/rng.ts';

export interface Critic {
  adapter: LoraAdapter;
  w: tf.Variable; // [D, 1]
  b: tf.Variable; // [1]
  /** Trainable variables in a fixed order (the optimizer state is aligned with it): LoRA, w, b. */
  variables(): tf.Variable[];
  dispose(): void;
}

let made = 0; // tfjs variable names are global: one pair per critic made in this process

export function makeCritic(adapter: LoraAdapter, w: Float32Array, b: number): Critic {
  const D = w.length;
  const k = made++;
  const wv = tf.variable(tf.tensor2d(w, [D, 1]), true, `critic/value_head/w_${k}`);
  const bv = tf.variable(tf.tensor1d([b]), true, `critic/value_head/b_${k}`);
  return {
    adapter,
    w: wv,
    b: bv,
    variables: () => [...adapter.variables(), wv, bv],
    dispose() {
      adapter.dispose();
      tf.dispose([wv, bv]);
    },
  };
}

/**
 * A fresh critic: LoRA initialised as the actor's (B = 0, so it starts at the base model) from
 * its own stream; w ~ U(-1/sqrt(D), 1/sqrt(D)) (torch nn.Linear's default), b = 0.
 */
export function createCritic(model: Qwen3Model, lora: LoraConfig, seed: number): Critic {
  const D = model.config.hiddenSize;
  const rng = Rng.derive(seed, 'critic-head');
  const w = new Float32Array(D);
  for (let k = 0; k < D; k++) w[k] = (2 * rng.next() - 1) / Math.sqrt(D);
  return makeCritic(createLora(model, lora, Rng.derive(seed, 'critic-lora').nextU32()), w, 0);
}

/** The value head on hidden states: [N, D] -> [N]. */
export function valueHead(h: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D): tf.Tensor1D {
  return tf.add(tf.reshape(tf.matMul(h, w), [-1]), b) as tf.Tensor1D;
}

/**
 * Values [B, T] of right-padded sequences: column t (t >= 1, where scored[b][t] != 0) is
 * V(h_{t-1}); every other column 0. scored: the response tokens (absent = all t >= 1).
 */
export function criticValues(
  model: Qwen3Model,
  critic: Critic,
  inputIds: number[][],
  scored: readonly (readonly number[])[] | undefined,
  opts: StackOptions = {},
): tf.Tensor2D {
  const B = inputIds.length;
  const T = Math.max(...inputIds.map((s) => s.length));
  const rows = new Int32Array(B * T);
  inputIds.forEach((seq, b) => rows.set(idsToRows(model.vocab, seq, model.config.vocabSize), b * T));
  const h: number[] = [];
  inputIds.forEach((seq, b) => {
    for (let t = 1; t < seq.length; t++) if (!scored || scored[b]?.[t]) h.push(b * T + t - 1);
  });
  return tf.tidy(() => {
    if (h.length === 0) return tf.zeros([B, T]) as tf.Tensor2D;
    const hs = runStack(model, critic.adapter, tf.tensor2d(rows, [B, T], 'int32'), opts); // [B*T, D]
    const at = Int32Array.from(h);
    const v = valueHead(gatherRows(hs, at) as tf.Tensor2D, critic.w as tf.Tensor2D, critic.b as tf.Tensor1D); // [N]
    return tf.reshape(
      scatterRows(
        v,
        Int32Array.from(at, (i) => i + 1),
        B * T,
      ),
      [B, T],
    ) as tf.Tensor2D;
  });
}

/** The clipped value loss (header) with the batch's token count as normalizer; the clip fraction's numerator. */
export function clippedValueLossTf(
  v: tf.Tensor2D,
  oldV: tf.Tensor2D,
  ret: tf.Tensor2D,
  mask: tf.Tensor2D,
  cliprange: number,
  tokens: number,
): { loss: tf.Scalar; clipped: tf.Scalar } {
  return tf.tidy(() => {
    const vClip = tf.add(oldV, tf.clipByValue(tf.sub(v, oldV), -cliprange, cliprange));
    const l1 = tf.square(tf.sub(v, ret));
    const l2 = tf.square(tf.sub(vClip, ret));
    const loss = tf.mul(0.5, tf.div(tf.sum(tf.mul(tf.maximum(l1, l2), mask)), Math.max(tokens, 1))) as tf.Scalar;
    const clipped = tf.sum(tf.mul(tf.cast(tf.greater(l2, l1), 'float32'), mask)) as tf.Scalar;
    return { loss, clipped };
  });
}
