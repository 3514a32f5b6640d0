// Attention of a ragged batched step (batch-step.ts), each sequence over its own keys only,
// by rules that depend on the query rows alone (never on what else is in the batch):
//   - a sequence with one new id (a decode step) attends in the decode pool (decode-pool.ts),
//     all such sequences in one set of ops;
//   - a run of prompt ids is cut into segments at the multiples of `align` positions; a
//     segment [s, e) attends to keys [0, e): one query row as the decode pool computes it,
//     more rows head by head through plain 2-D matmuls (tfjs wasm sends those to XNNPACK,
//     ~20x faster than its scalar loop for batched / transposed matmuls at prefill sizes).
import * as tf from '@tensorflow/tfjs';
import { orderedSoftmax, type DecodePool } from './decode-pool.ts';
import type { CacheState } from './kv-cache.ts';
import { causalMask } from './layers.ts';

/** Rows of one sequence in the step. */
export interface Placed {
  st: CacheState;
  row: number; // first row in [N]
  n: number;
  /** One new id: attends in the decode pool. */
  pooled: boolean;
  /** Attention segments, absolute positions [start, end) (unpooled only). */
  segments: { start: number; end: number }[];
}

export interface Dims {
  H: number;
  KV: number;
  hd: number;
}

/**
 * One segment: queries q [H, len, hd] at positions [start, start + len) over keys/values
 * k, v [KV, start + len, hd] -> [H, len, hd]. Also a prefix-tree node's attention over its
 * ancestors and itself (prefix-logprobs.ts); every op here has a gradient on every backend.
 */
export function segmentAttention(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, start: number, { H, KV, hd }: Dims): tf.Tensor {
  const rep = H / KV;
  const len = q.shape[1] as number;
  const Tk = k.shape[1] as number;
  if (len === 1) {
    // exactly DecodePool.attend for one slot without padding (one query row sees every key: no mask)
    const probs = orderedSoftmax(tf.matMul(tf.reshape(q, [KV, rep, hd]), k, false, true)); // [KV, rep, Tk]
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
 * Attention of every sequence of the step for one layer. q [N, H, hd] (rope'd, scaled by
 * 1/sqrt(hd)), k, v [N, KV, hd] for the new rows. Returns [N, H, hd] and the new cache k, v
 * [KV, length + n, hd] of each unpooled sequence (null for pooled ones: the pool keeps theirs).
 */
export function attend(
  q: tf.Tensor,
  k: tf.Tensor,
  v: tf.Tensor,
  placed: readonly Placed[],
  layer: number,
  pool: DecodePool,
  poolMask: tf.Tensor | null,
  dims: Dims,
) {
  const { H, KV, hd } = dims;
  const N = q.shape[0] as number;
  const pooled = placed.filter((p) => p.pooled);
  const pieces: tf.Tensor[] = []; // [rows, H, hd] each; `rowsOf` lists their rows, in order
  const rowsOf: number[] = [];
  if (pooled.length) {
    const rows = tf.tensor1d(
      pooled.map((p) => p.row),
      'int32',
    );
    pieces.push(
      pool.attend(
        layer,
        pooled.map((p) => p.st),
        tf.gather(q, rows),
        tf.gather(k, rows),
        tf.gather(v, rows),
        poolMask as tf.Tensor,
      ),
    );
    rowsOf.push(...pooled.map((p) => p.row));
  }
  const unpooled = placed.some((p) => !p.pooled);
  // head-major copies for the segments, made once for all rows
  const [qT, kT, vT] = unpooled ? [q, k, v].map((t) => tf.transpose(t, [1, 0, 2])) : []; // [H | KV, N, hd]
  const segments: tf.Tensor[] = []; // [H, len, hd] each
  const caches = placed.map((p) => {
    if (p.pooled) return null;
    const past = p.st.layers[layer];
    const kNew = tf.slice(kT as tf.Tensor, [0, p.row, 0], [KV, p.n, hd]);
    const vNew = tf.slice(vT as tf.Tensor, [0, p.row, 0], [KV, p.n, hd]);
    const kAll = past ? tf.concat([past.k, kNew], 1) : kNew; // [KV, L + n, hd]
    const vAll = past ? tf.concat([past.v, vNew], 1) : vNew;
    const total = p.st.length + p.n;
    for (const { start, end } of p.segments) {
      const qs = tf.slice(qT as tf.Tensor, [0, p.row + start - p.st.length, 0], [H, end - start, hd]);
      const ks = end === total ? kAll : tf.slice(kAll, [0, 0, 0], [KV, end, hd]);
      const vs = end === total ? vAll : tf.slice(vAll, [0, 0, 0], [KV, end, hd]);
      segments.push(segmentAttention(qs, ks, vs, start, dims));
      for (let t = start; t < end; t++) rowsOf.push(p.row + t - p.st.length);
    }
    return { k: kAll, v: vAll };
  });
  if (segments.length) pieces.push(tf.transpose(segments.length > 1 ? tf.concat(segments, 1) : (segments[0] as tf.Tensor), [1, 0, 2]));
  const all = pieces.length > 1 ? tf.concat(pieces, 0) : (pieces[0] as tf.Tensor); // [N, H, hd], rows in rowsOf order
  if (rowsOf.every((r, i) => r === i)) return { ctx: all, caches };
  const perm = new Int32Array(N);
  rowsOf.forEach((r, i) => (perm[r] = i));
  return { ctx: tf.gather(all, tf.tensor1d(perm, 'int32')), caches };
}
