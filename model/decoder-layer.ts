// One Qwen3 decoder layer (method §9), in paper/HF order:
//   h = x + o_proj(attn(rope(q_norm(q_proj(n))), rope(k_norm(k_proj(n))), v_proj(n))),  n = input_layernorm(x)
//   y = h + down_proj(silu(gate_proj(m)) * up_proj(m)),                              m = post_attention_layernorm(h)
// Grouped-query attention without copying k/v: query heads h = kv*rep + r share kv head kv
// (HF repeat_kv), so q is laid out [B*KV, rep*Tq, hd] against k, v [B*KV, Tk, hd].
import * as tf from '@tensorflow/tfjs';
import type { Qwen3Config } from './config.ts';
import { applyRope, linear, rmsNorm, silu, type LayerLora } from './layers.ts';
import type { ComputeLayer } from './weights.ts';

export interface LayerInput {
  x: tf.Tensor; // [B*Tq, D]
  B: number;
  Tq: number;
  cos: tf.Tensor; // [Tq, 1, hd]
  sin: tf.Tensor; // [Tq, 1, hd]
  mask: tf.Tensor; // [Tq, Tk] additive
  /** Cached keys/values of earlier positions, [B*KV, Tpast, hd] (after k_norm and rope). */
  past?: { k: tf.Tensor; v: tf.Tensor };
}

export interface LayerOutput {
  y: tf.Tensor; // [B*Tq, D]
  k: tf.Tensor; // [B*KV, Tk, hd], past + new
  v: tf.Tensor; // [B*KV, Tk, hd]
}

/** [B*T, n*hd] -> [B, n, T, hd] */
function heads(x: tf.Tensor, B: number, T: number, n: number, hd: number): tf.Tensor {
  return tf.transpose(tf.reshape(x, [B, T, n, hd]), [0, 2, 1, 3]);
}

export function decoderLayer(cfg: Qwen3Config, w: ComputeLayer, lora: LayerLora | null, inp: LayerInput): LayerOutput {
  const { B, Tq, x } = inp;
  const { numAttentionHeads: H, numKeyValueHeads: KV, headDim: hd, rmsNormEps: eps } = cfg;
  const rep = H / KV;

  const n = rmsNorm(x, w.inputNorm, eps); // [B*Tq, D]
  const q4 = tf.reshape(linear(n, w.projT.q_proj, 'q_proj', lora), [B, Tq, H, hd]);
  const k4 = tf.reshape(linear(n, w.projT.k_proj, 'k_proj', lora), [B, Tq, KV, hd]);
  const v2 = linear(n, w.projT.v_proj, 'v_proj', lora);
  // Per-head RMSNorm on q and k BEFORE rope (Qwen3).
  const q = applyRope(rmsNorm(q4, w.qNorm, eps), inp.cos, inp.sin); // [B, Tq, H, hd]
  const kNew = tf.reshape(tf.transpose(applyRope(rmsNorm(k4, w.kNorm, eps), inp.cos, inp.sin), [0, 2, 1, 3]), [B * KV, Tq, hd]);
  const vNew = tf.reshape(heads(v2, B, Tq, KV, hd), [B * KV, Tq, hd]);
  const k = inp.past ? tf.concat([inp.past.k, kNew], 1) : kNew; // [B*KV, Tk, hd]
  const v = inp.past ? tf.concat([inp.past.v, vNew], 1) : vNew;
  const Tk = k.shape[1] as number;

  const qg = tf.reshape(tf.transpose(q, [0, 2, 1, 3]), [B * KV, rep * Tq, hd]);
  const scores = tf.mul(tf.matMul(qg, k, false, true), 1 / Math.sqrt(hd)); // [B*KV, rep*Tq, Tk]
  const masked = tf.add(tf.reshape(scores, [B * KV, rep, Tq, Tk]), inp.mask);
  const probs = tf.reshape(tf.softmax(masked, -1), [B * KV, rep * Tq, Tk]);
  const ctx = tf.reshape(tf.matMul(probs, v), [B, H, Tq, hd]);
  const attn = tf.reshape(tf.transpose(ctx, [0, 2, 1, 3]), [B * Tq, H * hd]);
  const h = tf.add(x, linear(attn, w.projT.o_proj, 'o_proj', lora));

  const m = rmsNorm(h, w.postNorm, eps);
  const act = tf.mul(silu(linear(m, w.projT.gate_proj, 'gate_proj', lora)), linear(m, w.projT.up_proj, 'up_proj', lora));
  const y = tf.add(h, linear(act, w.projT.down_proj, 'down_proj', lora));
  return { y, k, v };
}
