// One forward pass for many KV-cached sequences at once (continuous batching in serve/):
// each entry appends its own new ids (one for a decode step, a run of prompt ids for a
// prefill) at its own cache length. Everything row-wise runs once over the rows of all
// entries [N, D] (norms, rope, q/k/v/o and MLP projections, lm_head); attention runs per
// entry over that entry's own keys, so no key is ever padded. LoRA: the base projection
// covers all rows, each adapter's delta only the rows of its entries.
//
// Batch invariance (serve/README.md): an entry's numbers do not depend on the other entries,
// because (1) the row-wise kernels give row i the same bits for any row count (tested for
// tfjs wasm and cpu in tests/trainer/model/batch-invariance.test.ts) and (2) attention is
// per entry and split into segments at fixed absolute positions (multiples of `align`): the
// queries of a segment [s, e) attend to keys [0, e), so a segment always computes the same
// softmax rows of the same length however the ids are spread over steps. A prefix-cached
// block therefore holds exactly the k/v that a fresh prefill computes.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../../util/errors.ts';
import type { LoraAdapter, ProjName } from '../lora/types.ts';
import { cacheState, setCacheLayers, type CacheState, type KvCache } from './kv-cache.ts';
import { applyRope, causalMask, loraDelta, rmsNorm, ropeAt, silu, type LayerLora } from './layers.ts';
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

/** Rows of one entry in the step, with its attention segments (absolute positions [start, end)). */
interface Placed {
  st: CacheState;
  row: number; // first row in [N]
  n: number;
  segments: { start: number; end: number }[];
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

/**
 * One segment's attention: queries q [H, len, hd] at positions [start, start + len) over
 * keys/values k, v [KV, start + len, hd] -> [H, len, hd]. Two shapes of the same math, by a
 * rule that depends on the segment only (so a segment always takes the same one): one
 * query row takes the batched matmul (tfjs wasm runs it as a scalar loop, which is cheap for
 * one row and needs no weight packing); more rows go head by head through plain 2-D matmuls,
 * which tfjs wasm sends to XNNPACK (~20x faster than the scalar loop at prefill sizes).
 */
function segmentAttention(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, start: number, H: number, KV: number, hd: number): tf.Tensor {
  const rep = H / KV;
  const len = q.shape[1] as number;
  const Tk = k.shape[1] as number;
  if (len === 1) {
    // one query row sees every key: no mask
    const probs = tf.softmax(tf.matMul(tf.reshape(q, [KV, rep, hd]), k, false, true), -1); // [KV, rep, Tk]
    return tf.reshape(tf.matMul(probs, v), [H, 1, hd]);
  }
  const mask = causalMask(len, Tk, start); // [len, Tk]
  const heads = Array.from({ length: KV }, (_, h) => {
    const qh = tf.reshape(tf.slice(q, [h * rep, 0, 0], [rep, len, hd]), [rep * len, hd]);
    const kTh = tf.transpose(tf.reshape(tf.slice(k, [h, 0, 0], [1, Tk, hd]), [Tk, hd])); // [hd, Tk]
    const vh = tf.reshape(tf.slice(v, [h, 0, 0], [1, Tk, hd]), [Tk, hd]);
    const scores = tf.add(tf.reshape(tf.matMul(qh, kTh), [rep, len, Tk]), mask);
    return tf.reshape(tf.matMul(tf.reshape(tf.softmax(scores, -1), [rep * len, Tk]), vh), [rep, len, hd]);
  });
  return tf.concat(heads, 0); // [H, len, hd]
}

/**
 * Attention of every entry over its own keys, segment by segment. q [H, N, hd] (rope'd and
 * scaled by 1/sqrt(hd)), k, v [KV, N, hd] for the new rows. Returns [H, N, hd] and each
 * entry's new cache k, v [KV, length + n, hd].
 */
function attend(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, placed: Placed[], layer: number, H: number, KV: number, hd: number) {
  const ctx: tf.Tensor[] = [];
  const caches = placed.map((p) => {
    const past = p.st.layers[layer];
    const kNew = tf.slice(k, [0, p.row, 0], [KV, p.n, hd]);
    const vNew = tf.slice(v, [0, p.row, 0], [KV, p.n, hd]);
    const kAll = past ? tf.concat([past.k, kNew], 1) : kNew; // [KV, L + n, hd]
    const vAll = past ? tf.concat([past.v, vNew], 1) : vNew;
    const total = p.st.length + p.n;
    for (const { start, end } of p.segments) {
      const qs = tf.slice(q, [0, p.row + start - p.st.length, 0], [H, end - start, hd]);
      const ks = end === total ? kAll : tf.slice(kAll, [0, 0, 0], [KV, end, hd]);
      const vs = end === total ? vAll : tf.slice(vAll, [0, 0, 0], [KV, end, hd]);
      ctx.push(segmentAttention(qs, ks, vs, start, H, KV, hd));
    }
    return { k: kAll, v: vAll };
  });
  return { ctx: ctx.length > 1 ? tf.concat(ctx, 1) : (ctx[0] as tf.Tensor), caches };
}

function layerStep(model: Qwen3Model, w: ComputeLayer, x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor, placed: Placed[], groups: Group[], layer: number) {
  const cfg = model.config;
  const { numAttentionHeads: H, numKeyValueHeads: KV, headDim: hd, rmsNormEps: eps } = cfg;
  const N = x.shape[0] as number;
  const loras = groups.map((g) => layerLora(g.adapter, layer, {}));
  const n = rmsNorm(x, w.inputNorm, eps); // [N, D]
  const q3 = tf.reshape(project(n, w.projT.q_proj, 'q_proj', groups, loras), [N, H, hd]);
  const k3 = tf.reshape(project(n, w.projT.k_proj, 'k_proj', groups, loras), [N, KV, hd]);
  const v3 = tf.reshape(project(n, w.projT.v_proj, 'v_proj', groups, loras), [N, KV, hd]);
  // Per-head RMSNorm before rope (Qwen3); rope tables [N, 1, hd] broadcast over heads.
  const rope = (t: tf.Tensor, w1: tf.Tensor) => tf.reshape(applyRope(tf.expandDims(rmsNorm(t, w1, eps), 0), cos, sin), t.shape);
  const q = tf.transpose(tf.mul(rope(q3, w.qNorm), 1 / Math.sqrt(hd)), [1, 0, 2]); // [H, N, hd]
  const k = tf.transpose(rope(k3, w.kNorm), [1, 0, 2]); // [KV, N, hd]
  const v = tf.transpose(v3, [1, 0, 2]);
  const { ctx, caches } = attend(q, k, v, placed, layer, H, KV, hd);
  const attn = tf.reshape(tf.transpose(ctx, [1, 0, 2]), [N, H * hd]);
  const h = tf.add(x, project(attn, w.projT.o_proj, 'o_proj', groups, loras));
  const m = rmsNorm(h, w.postNorm, eps);
  const act = tf.mul(silu(project(m, w.projT.gate_proj, 'gate_proj', groups, loras)), project(m, w.projT.up_proj, 'up_proj', groups, loras));
  return { y: tf.add(h, project(act, w.projT.down_proj, 'down_proj', groups, loras)), caches };
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
    placed.push({ st, row: ids.length, n: e.ids.length, segments: segmentsOf(st.length, st.length + e.ids.length, align) });
    const last = groups[groups.length - 1];
    if (last && last.adapter === e.adapter) last.n += e.ids.length;
    else groups.push({ adapter: e.adapter, row: ids.length, n: e.ids.length });
    e.ids.forEach((id, t) => (ids.push(id), positions.push(st.length + t)));
  }
  const wanted = order.filter((i) => entries[i]!.logits);
  const next: { k: tf.Tensor; v: tf.Tensor }[][] = placed.map(() => []);
  const logits = tf.tidy(() => {
    const { cos, sin } = ropeAt(positions, cfg.headDim, cfg.ropeTheta);
    let x: tf.Tensor = tf.gather(model.weights.embed, tf.tensor1d(idsToRows(model.vocab, ids, cfg.vocabSize), 'int32')); // [N, D]
    model.weights.layers.forEach((w, l) => {
      const out = layerStep(model, w, x, cos, sin, placed, groups, l);
      out.caches.forEach((c, p) => next[p]!.push({ k: tf.keep(c.k), v: tf.keep(c.v) }));
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
  placed.forEach((p, j) => setCacheLayers(p.st, next[j] as { k: tf.Tensor; v: tf.Tensor }[], p.st.length + p.n));
  const out: (Float32Array | null)[] = entries.map(() => null);
  if (logits) {
    const values = logits.dataSync() as Float32Array;
    logits.dispose();
    wanted.forEach((i, j) => (out[i] = values.slice(j * model.rows, (j + 1) * model.rows)));
  }
  return out;
}
