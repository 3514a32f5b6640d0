// Qwen3 building blocks (method §9), pure functions over tensors, fp32.
import * as tf from '@tensorflow/tfjs';
import type { ProjName } from './lora/types.ts';

/** RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * w (HF Qwen3RMSNorm). */
export function rmsNorm(x: tf.Tensor, w: tf.Tensor, eps: number): tf.Tensor {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), w);
}

export const silu = (x: tf.Tensor): tf.Tensor => tf.mul(x, tf.sigmoid(x));

/**
 * Rotary tables for absolute positions offset..offset+T-1 (HF default rope):
 * inv_freq_i = theta^(-2i/hd), emb = cat(freqs, freqs); `sin` carries rotate_half's sign,
 * so rope(x) = x*cos + swapHalves(x)*sin.   cos, sin: [T, 1, hd] (broadcast over heads).
 */
export function ropeTables(T: number, offset: number, headDim: number, theta: number): { cos: tf.Tensor; sin: tf.Tensor } {
  return ropeAt(
    Array.from({ length: T }, (_, t) => offset + t),
    headDim,
    theta,
  );
}

/** The same tables for any list of absolute positions (rows of a ragged batch): [N, 1, hd]. */
export function ropeAt(positions: readonly number[], headDim: number, theta: number): { cos: tf.Tensor; sin: tf.Tensor } {
  const half = headDim / 2;
  const T = positions.length;
  const cos = new Float32Array(T * headDim);
  const sin = new Float32Array(T * headDim);
  positions.forEach((pos, t) => {
    for (let i = 0; i < half; i++) {
      const angle = pos * theta ** (-(2 * i) / headDim);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[t * headDim + i] = c;
      cos[t * headDim + half + i] = c;
      sin[t * headDim + i] = -s; // rotate_half(x) = cat(-x2, x1)
      sin[t * headDim + half + i] = s;
    }
  });
  return { cos: tf.tensor(cos, [T, 1, headDim]), sin: tf.tensor(sin, [T, 1, headDim]) };
}

/** x: [B, T, heads, hd] -> rotated, same shape. */
export function applyRope(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  const hd = x.shape[3] as number;
  const [x1, x2] = tf.split(x, [hd / 2, hd / 2], 3);
  const swapped = tf.concat([x2 as tf.Tensor, x1 as tf.Tensor], 3);
  return tf.add(tf.mul(x, cos), tf.mul(swapped, sin));
}

/** Additive mask [Tq, Tk]: query i (absolute position offset+i) sees keys j <= offset+i. */
export function causalMask(Tq: number, Tk: number, offset: number): tf.Tensor {
  const m = new Float32Array(Tq * Tk);
  for (let i = 0; i < Tq; i++) for (let j = offset + i + 1; j < Tk; j++) m[i * Tk + j] = -1e9;
  return tf.tensor(m, [Tq, Tk]);
}

/** Per-layer LoRA tensors the forward reads (passed explicitly so recomputation can differentiate them). */
export interface LayerLora {
  pairs: Partial<Record<ProjName, { A: tf.Tensor; B: tf.Tensor }>>;
  scaling: number;
  /** 0 outside training. */
  dropout: number;
  /** Seed per module for the dropout mask (same seed -> same mask, so recomputation matches). */
  seeds: Partial<Record<ProjName, number>>;
}

/** x [N, in] -> [N, out]: x W^T (+ scaling * dropout(x) A^T B^T). Wt = W^T is [in, out]. */
export function linear(x: tf.Tensor, Wt: tf.Tensor, m: ProjName, lora: LayerLora | null): tf.Tensor {
  const y = tf.matMul(x, Wt);
  return lora?.pairs[m] ? tf.add(y, loraDelta(x, m, lora)) : y;
}

/** The LoRA term alone, [N, out]: scaling * dropout(x) A^T B^T (module m must be targeted). */
export function loraDelta(x: tf.Tensor, m: ProjName, lora: LayerLora): tf.Tensor {
  const p = lora.pairs[m] as { A: tf.Tensor; B: tf.Tensor };
  const xin = lora.dropout > 0 ? tf.dropout(x, lora.dropout, undefined, lora.seeds[m]) : x;
  const low = tf.mul(tf.matMul(xin, p.A, false, true), lora.scaling); // [N, r]
  return tf.matMul(low, p.B, false, true);
}
