// Copies of KV-cache position ranges, for serve/'s prefix cache (vLLM's automatic prefix
// caching): `sliceKv` copies positions [start, end) of a cache out as a block, `appendKv`
// puts blocks back after a cache's last position. Tensors are immutable, so one block is
// shared by every sequence that reuses it; the prefix cache frees it when it evicts it.
import * as tf from '@tensorflow/tfjs';
import { cacheState, setCacheLayers, type KvCache } from './kv-cache.ts';
import type { Qwen3Model } from './model.ts';

export interface KvBlock {
  /** Positions held. */
  readonly length: number;
  /** Per layer: k, v [KV, length, hd] (after k_norm and rope, as in the cache). */
  readonly layers: readonly { k: tf.Tensor; v: tf.Tensor }[];
  /** Bytes of its tensors (float32). */
  readonly bytes: number;
  dispose(): void;
}

/** Positions [start, end) of the cache, as new tensors. */
export function sliceKv(model: Qwen3Model, cache: KvCache, start: number, end: number): KvBlock {
  const st = cacheState(model, cache);
  if (!(start >= 0 && start < end && end <= st.length)) throw new Error(`internal: sliceKv [${start}, ${end}) outside a cache of ${st.length}`);
  const { numKeyValueHeads: KV, headDim: hd } = model.config;
  const n = end - start;
  const layers = st.pool
    ? st.pool.slice(st, start, end)
    : st.layers.map((l) => {
        if (!l) throw new Error('internal: sliceKv on an empty cache');
        return { k: tf.slice(l.k, [0, start, 0], [KV, n, hd]), v: tf.slice(l.v, [0, start, 0], [KV, n, hd]) };
      });
  const bytes = 2 * layers.length * KV * n * hd * 4;
  return { length: n, layers, bytes, dispose: () => layers.forEach((l) => (l.k.dispose(), l.v.dispose())) };
}

/** Append blocks, in order, after the cache's last position. */
export function appendKv(model: Qwen3Model, cache: KvCache, blocks: readonly KvBlock[]): void {
  if (!blocks.length) return;
  const st = cacheState(model, cache);
  if (st.pool) throw new Error('internal: appendKv on a decoding (pooled) cache');
  // concat of a single tensor returns that tensor: clone so the cache owns what it holds
  const join = (ts: tf.Tensor[]) => (ts.length > 1 ? tf.concat(ts, 1) : tf.clone(ts[0] as tf.Tensor));
  const layers = st.layers.map((past, i) => ({
    k: join([...(past ? [past.k] : []), ...blocks.map((b) => b.layers[i]!.k)]),
    v: join([...(past ? [past.v] : []), ...blocks.map((b) => b.layers[i]!.v)]),
  }));
  setCacheLayers(st, layers, st.length + blocks.reduce((s, b) => s + b.length, 0));
}
