// Incremental decoding with a key/value cache (serving and rollouts): prefill many ids or
// decode one, and return the logits of the last new position. Same decoder layer as the
// batched forward, so the two agree to float rounding.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
import type { LoraAdapter } from './lora/types.ts';
import { decoderLayer } from './decoder-layer.ts';
import { causalMask, rmsNorm, ropeTables } from './layers.ts';
import type { Qwen3Model } from './model.ts';
import { layerLora } from './stack.ts';
import { idsToRows } from './vocab-map.ts';

export interface KvCache {
  /** Positions cached so far. */
  readonly length: number;
  dispose(): void;
}

/** What a cache holds (batch-step.ts and kv-blocks.ts read and replace it too). */
export interface CacheState extends KvCache {
  length: number;
  readonly model: Qwen3Model;
  /** Per layer: k, v [KV, length, hd] after k_norm and rope; null before the first step (and while pooled). */
  layers: ({ k: tf.Tensor; v: tf.Tensor } | null)[];
  /** Set while the k/v live in a decode pool (decode-pool.ts) instead of `layers`. */
  pool: PoolMembership | null;
}

/** What a cache needs of the decode pool it sits in (decode-pool.ts implements it). */
export interface PoolMembership {
  remove(st: CacheState): void;
  /** k, v [KV, end - start, hd] of positions [start, end) of `st`, per layer. */
  slice(st: CacheState, start: number, end: number): { k: tf.Tensor; v: tf.Tensor }[];
}

/** The cache's state, checked to belong to `model`. */
export function cacheState(model: Qwen3Model, cache: KvCache): CacheState {
  const st = cache as CacheState;
  if (st.model !== model) throw new Error('internal: KV cache belongs to another model');
  return st;
}

/** Replace the cached k/v: the old tensors are freed, the cache owns the new ones. */
export function setCacheLayers(st: CacheState, layers: { k: tf.Tensor; v: tf.Tensor }[], length: number): void {
  for (const l of st.layers) l && (l.k.dispose(), l.v.dispose());
  st.layers = layers;
  st.length = length;
}

export function createKvCache(model: Qwen3Model): KvCache {
  const state: CacheState = {
    length: 0,
    model,
    layers: model.weights.layers.map(() => null),
    pool: null,
    dispose() {
      state.pool?.remove(state);
      for (const l of state.layers) l && (l.k.dispose(), l.v.dispose());
      state.layers = state.layers.map(() => null);
      state.length = 0;
    },
  };
  return state;
}

/**
 * Append newIds at positions cache.length.. and return the logits of the last new
 * position over the full id space [vocabSize] (-Infinity for ids outside a vocab map).
 */
export function forwardStep(model: Qwen3Model, adapter: LoraAdapter | null, cache: KvCache, newIds: number[]): Float32Array {
  const st = cacheState(model, cache);
  if (st.pool) throw new Error('internal: forwardStep on a pooled KV cache');
  const n = newIds.length;
  if (n === 0) throw new InputError('forwardStep: no new token ids');
  const cfg = model.config;
  const offset = st.length;
  if (offset + n > cfg.maxPositionEmbeddings)
    throw new InputError(`forwardStep: ${offset + n} positions exceed max_position_embeddings ${cfg.maxPositionEmbeddings}`);
  const rows = idsToRows(model.vocab, newIds, cfg.vocabSize);
  const next: { k: tf.Tensor; v: tf.Tensor }[] = [];
  const logits = tf.tidy(() => {
    const { cos, sin } = ropeTables(n, offset, cfg.headDim, cfg.ropeTheta);
    const mask = causalMask(n, offset + n, offset);
    let x: tf.Tensor = tf.gather(model.weights.embed, tf.tensor1d(rows, 'int32')); // [n, D]
    model.weights.layers.forEach((w, i) => {
      const past = st.layers[i] ?? undefined;
      const out = decoderLayer(cfg, w, layerLora(adapter, i, {}), { x, B: 1, Tq: n, cos, sin, mask, past });
      next.push({ k: tf.keep(out.k), v: tf.keep(out.v) });
      x = out.y;
    });
    const last = rmsNorm(tf.slice(x, [n - 1, 0], [1, cfg.hiddenSize]), model.weights.norm, cfg.rmsNormEps);
    return tf.reshape(tf.matMul(last, model.weights.lmHeadT), [model.rows]);
  });
  setCacheLayers(st, next, offset + n);
  const values = logits.dataSync() as Float32Array;
  logits.dispose();
  return fullLogits(model, values);
}

/**
 * Logits over the model's rows [rows] -> over the full id space [vocabSize], -Infinity for
 * ids outside a vocab map. `out`, when given, must hold -Infinity at those ids already.
 */
export function fullLogits(model: Qwen3Model, rowLogits: Float32Array, out?: Float32Array): Float32Array {
  if (!model.vocab) return out ? (out.set(rowLogits), out) : Float32Array.from(rowLogits);
  const full = out ?? new Float32Array(model.config.vocabSize).fill(-Infinity);
  model.vocab.keptIds.forEach((id, k) => (full[id] = rowLogits[k] as number));
  return full;
}
