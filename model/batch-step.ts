// One forward pass for many KV-cached sequences at once (continuous batching in serve/):
// each entry appends its own new ids (one for a decode step, a run of prompt ids for a
// prefill) at its own cache length. Everything row-wise runs once over the rows of all
// entries [N, D] (norms, rope, q/k/v/o and MLP projections, lm_head); attention
// (batch-attention.ts) keeps every sequence to its own keys: decode steps together in the
// decode pool, prompt runs per sequence. LoRA: the base projection covers all rows, each
// adapter's delta only the rows of its entries.
//
// Batch invariance (serve/README.md): an entry's numbers do not depend on the other entries,
// because (1) the row-wise kernels give row i the same bits for any row count (tested for
// tfjs wasm and cpu in tests/model/batch-invariance.test.ts), (2) the decode pool's
// padding adds exact zeros in order, and (3) prompt attention is split into segments at
// fixed absolute positions (multiples of `align`): the queries of a segment [s, e) attend to
// keys [0, e), so a segment computes the same softmax rows however the ids are spread over
// steps. A prefix-cached block therefore holds exactly the k/v that a fresh prefill computes.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
import type { LoraAdapter, ProjName } from './lora/types.ts';
import { cacheState, setCacheLayers, type KvCache } from './kv-cache.ts';
import { attend, type Placed } from './batch-attention.ts';
import { decodePool, type DecodePool } from './decode-pool.ts';
import { loraDelta, rmsNorm, ropeAt, type LayerLora } from './layers.ts';
import { rowLayer } from './row-layer.ts';
import type { Qwen3Model } from './model.ts';
import { layerLora } from './stack.ts';
import { idsToRows } from './vocab-map.ts';
import type { ComputeLayer } from './weights.ts';

export interface BatchEntry {
  cache: KvCache;
  adapter: LoraAdapter | null;
  /** Appended at positions cache.length, cache.length + 1, ... */
  ids: readonly number[];
  /** Return the logits of the last new position. */
  logits: boolean;
}

/** A run of rows that share one adapter (entries are ordered so each adapter's rows are contiguous). */
interface Group {
  adapter: LoraAdapter | null;
  row: number;
  n: number;
}

/** [start, end) cut at the multiples of `align` (absolute positions). */
export function segmentsOf(start: number, end: number, align: number): { start: number; end: number }[] {
  const out = [];
  for (let s = start; s < end; ) {
    const e = Math.min(end, (Math.floor(s / align) + 1) * align);
    out.push({ start: s, end: e });
    s = e;
  }
  return out;
}

/** Base projection over all rows, plus each group's LoRA delta on its own rows. x [N, in] -> [N, out]. */
function project(x: tf.Tensor, Wt: tf.Tensor, m: ProjName, groups: Group[], loras: (LayerLora | null)[]): tf.Tensor {
  const y = tf.matMul(x, Wt);
  if (!loras.some((l) => l?.pairs[m])) return y;
  if (groups.length === 1) return tf.add(y, loraDelta(x, m, loras[0] as LayerLora));
  const D = x.shape[1] as number;
  const out = y.shape[1] as number;
  const parts = groups.map((g, i) => {
    const yg = tf.slice(y, [g.row, 0], [g.n, out]);
    const lora = loras[i];
    return lora?.pairs[m] ? tf.add(yg, loraDelta(tf.slice(x, [g.row, 0], [g.n, D]), m, lora)) : yg;
  });
  return tf.concat(parts, 0);
}

interface StepContext {
  cos: tf.Tensor; // [N, 1, hd]
  sin: tf.Tensor;
  placed: Placed[];
  groups: Group[];
  pool: DecodePool;
  poolMask: tf.Tensor | null;
}

function layerStep(model: Qwen3Model, w: ComputeLayer, x: tf.Tensor, c: StepContext, layer: number) {
  const { numAttentionHeads: H, numKeyValueHeads: KV, headDim: hd } = model.config;
  const loras = c.groups.map((g) => layerLora(g.adapter, layer, {}));
  let caches: ReturnType<typeof attend>['caches'] = [];
  const y = rowLayer(
    model.config,
    w,
    x,
    c.cos,
    c.sin,
    (xi, Wt, m) => project(xi, Wt, m, c.groups, loras),
    (q, k, v) => {
      const out = attend(q, k, v, c.placed, layer, c.pool, c.poolMask, { H, KV, hd });
      caches = out.caches;
      return out.ctx;
    },
  );
  return { y, caches };
}

/**
 * Append each entry's ids to its cache in one forward pass. Returns, per entry, the logits
 * of its last new position over the model's rows [rows] (null when not asked for).
 * `align`: attention segment boundaries (the prefix cache's block size; Infinity = none).
 */
export function forwardBatch(model: Qwen3Model, entries: readonly BatchEntry[], align: number): (Float32Array | null)[] {
  const cfg = model.config;
  // Entries of one adapter next to each other (first-appearance order); results go back by index.
  const adapters = [...new Set(entries.map((e) => e.adapter))];
  const order = entries.map((_, i) => i).sort((a, b) => adapters.indexOf(entries[a]!.adapter) - adapters.indexOf(entries[b]!.adapter) || a - b);
  const placed: Placed[] = [];
  const groups: Group[] = [];
  const ids: number[] = [];
  const positions: number[] = [];
  for (const i of order) {
    const e = entries[i] as BatchEntry;
    const st = cacheState(model, e.cache);
    if (e.ids.length === 0) throw new InputError('forwardBatch: an entry has no new token ids');
    if (st.length + e.ids.length > cfg.maxPositionEmbeddings)
      throw new InputError(`forwardBatch: ${st.length + e.ids.length} positions exceed max_position_embeddings ${cfg.maxPositionEmbeddings}`);
    if (placed.some((p) => p.st === st)) throw new Error('internal: one KV cache twice in a batch');
    const pooled = e.ids.length === 1;
    placed.push({ st, row: ids.length, n: e.ids.length, pooled, segments: pooled ? [] : segmentsOf(st.length, st.length + e.ids.length, align) });
    const last = groups[groups.length - 1];
    if (last && last.adapter === e.adapter) last.n += e.ids.length;
    else groups.push({ adapter: e.adapter, row: ids.length, n: e.ids.length });
    e.ids.forEach((id, t) => (ids.push(id), positions.push(st.length + t)));
  }
  const wanted = order.filter((i) => entries[i]!.logits);
  const pool = decodePool(model);
  const stepping = placed.filter((p) => p.pooled).map((p) => p.st);
  if (stepping.length) pool.admit(stepping);
  const next: { k: tf.Tensor; v: tf.Tensor }[][] = placed.map(() => []);
  const logits = tf.tidy(() => {
    const { cos, sin } = ropeAt(positions, cfg.headDim, cfg.ropeTheta);
    const c: StepContext = { cos, sin, placed, groups, pool, poolMask: stepping.length ? pool.stepMask(stepping) : null };
    let x: tf.Tensor = tf.gather(model.weights.embed, tf.tensor1d(idsToRows(model.vocab, ids, cfg.vocabSize), 'int32')); // [N, D]
    model.weights.layers.forEach((w, l) => {
      const out = layerStep(model, w, x, c, l);
      out.caches.forEach((kv, p) => kv && next[p]!.push({ k: tf.keep(kv.k), v: tf.keep(kv.v) }));
      x = out.y;
    });
    if (!wanted.length) return undefined;
    const lastRows = wanted.map((i) => {
      const p = placed[order.indexOf(i)] as Placed;
      return p.row + p.n - 1;
    });
    const h = rmsNorm(tf.gather(x, tf.tensor1d(lastRows, 'int32')), model.weights.norm, cfg.rmsNormEps); // [B', D]
    return tf.matMul(h, model.weights.lmHeadT); // [B', rows]
  });
  placed.forEach((p, j) => (p.pooled ? (p.st.length += 1) : setCacheLayers(p.st, next[j] as { k: tf.Tensor; v: tf.Tensor }[], p.st.length + p.n)));
  const out: (Float32Array | null)[] = entries.map(() => null);
  if (logits) {
    const values = logits.dataSync() as Float32Array;
    logits.dispose();
    wanted.forEach((i, j) => (out[i] = values.slice(j * model.rows, (j + 1) * model.rows)));
  }
  return out;
}
