// One Qwen3 decoder layer over a flat set of token rows [N, D] whose attention is supplied by
// the caller (method §9): the ragged serving step (batch-step.ts: KV caches, decode pool) and
// the prefix-tree training forward (prefix-logprobs.ts: each node over its ancestors) differ
// only there. Everything else is row-wise, so each row gets the same bits for any row count.
import * as tf from '@tensorflow/tfjs';
import type { Qwen3Config } from './config.ts';
import type { ProjName } from './lora/types.ts';
import { applyRope, rmsNorm, silu } from './layers.ts';
import type { ComputeLayer } from './weights.ts';

/** x [N, in] -> [N, out] with the base weight Wt [in, out] and whatever LoRA applies. */
export type Project = (x: tf.Tensor, Wt: tf.Tensor, m: ProjName) => tf.Tensor;
/** q [N, H, hd] (rope'd, scaled by 1/sqrt(hd)), k, v [N, KV, hd] -> context [N, H, hd]. */
export type Attention = (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) => tf.Tensor;

/** cos, sin: rope tables [N, 1, hd] of each row's absolute position. Returns [N, D]. */
export function rowLayer(cfg: Qwen3Config, w: ComputeLayer, x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor, project: Project, attention: Attention): tf.Tensor {
  const { numAttentionHeads: H, numKeyValueHeads: KV, headDim: hd, rmsNormEps: eps } = cfg;
  const N = x.shape[0] as number;
  const n = rmsNorm(x, w.inputNorm, eps); // [N, D]
  const q3 = tf.reshape(project(n, w.projT.q_proj, 'q_proj'), [N, H, hd]);
  const k3 = tf.reshape(project(n, w.projT.k_proj, 'k_proj'), [N, KV, hd]);
  const v3 = tf.reshape(project(n, w.projT.v_proj, 'v_proj'), [N, KV, hd]);
  // Per-head RMSNorm before rope (Qwen3); rope tables [N, 1, hd] broadcast over heads.
  const rope = (t: tf.Tensor, w1: tf.Tensor) => tf.reshape(applyRope(tf.expandDims(rmsNorm(t, w1, eps), 0), cos, sin), t.shape);
  const q = tf.mul(rope(q3, w.qNorm), 1 / Math.sqrt(hd)); // [N, H, hd]
  const attn = tf.reshape(attention(q, rope(k3, w.kNorm), v3), [N, H * hd]);
  const h = tf.add(x, project(attn, w.projT.o_proj, 'o_proj'));
  const m = rmsNorm(h, w.postNorm, eps);
  const act = tf.mul(silu(project(m, w.projT.gate_proj, 'gate_proj')), project(m, w.projT.up_proj, 'up_proj'));
  return tf.add(h, project(act, w.projT.down_proj, 'down_proj'));
}
