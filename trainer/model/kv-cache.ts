// Incremental decoding with a key/value cache (serving and rollouts): prefill many ids or
// decode one, and return the logits of the last new position. Same decoder layer as the
// batched forward, so the two agree to float rounding.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../../util/errors.ts';
import type { LoraAdapter } from '../lora/types.ts';
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

interface CacheState extends KvCache {
  length: number;
  readonly model: Qwen3Model;
  /** Per layer: k, v [KV, length, hd] after k_norm and rope; null before the first step. */
  layers: ({ k: tf.Tensor; v: tf.Tensor } | null)[];
}

export function createKvCache(model: Qwen3Model): KvCache {
  const state: CacheState = {
    length: 0,
    model,
    layers: model.weights.layers.map(() => null),
    dispose() {
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
  const st = cache as CacheState;
  if (st.model !== model) throw new Error('internal: KV cache belongs to another model');
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
  for (const l of st.layers) l && (l.k.dispose(), l.v.dispose());
  st.layers = next;
  st.length = offset + n;
  const values = logits.dataSync() as Float32Array;
  logits.dispose();
  if (!model.vocab) return Float32Array.from(values);
  const full = new Float32Array(cfg.vocabSize).fill(-Infinity);
  model.vocab.keptIds.forEach((id, k) => (full[id] = values[k] as number));
  return full;
}
