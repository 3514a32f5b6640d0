// Per-position allowed sets of constrained (grammar-masked) turns, for scoring them under
// the same masked, renormalised distribution they were sampled from (issue 14; method §5
// ratio, §9 "score exactly what the server sampled").
//
// A server that masks the logits before sampling (vLLM structured outputs, `gsteer serve`
// with a grammar) draws token t from softmax over the allowed ids A_t only:
//     log p_masked(id_t) = logit[id_t] - logsumexp_{v in A_t} logit[v]
// Scoring the same token under the raw softmax gives logit - logsumexp_all <= the masked
// value, so exp(logp_raw - logp_server) < 1 on every constrained token: the GRPO ratio
// would be biased. The trainer therefore adds a bias row to the logits, 0 on A_t and
// MASKED_LOGIT elsewhere, before the log-sum-exp and the entropy.
//
// Scale: positions of one grammar state share one allowed set, so a sequence keeps a table
// of its distinct bitmasks and a per-position index into it; equal masks of different
// sequences are merged (maskIndex). Below SPARSE_MIN_ROWS output rows each scored position
// gets its bias row from the [M + 1, rows] table of the distinct masks (applyMaskBias,
// tableRows): by a one-hot matmul where the backend has a fast one (wasm: XNNPACK), by a
// gather on cpu; the same bits. From SPARSE_MIN_ROWS on no [N, rows] bias is built
// (masked-head.ts: each mask on its cheap side). model/logprobs.ts maskPath picks one for
// tests and benches. Issue 22 tried grouping the positions by mask instead (one broadcast bias
// row per group): ~40 masks per turn made the groups too small to pay on wasm (4.9x the
// unmasked step), so it went.
import * as tf from '@tensorflow/tfjs';
import { bitIndices, hasBit } from '../util/bits.ts';
import { InputError } from '../util/errors.ts';
import { logSumExpRows } from './fused.ts';
import type { VocabMap } from './vocab-map.ts';

/**
 * A large finite negative instead of -Infinity: exp underflows to exactly 0 in float32 (so
 * the sums are those over A_t only), and the entropy's p * logit stays 0 * -1e9 = 0 where
 * -Infinity would give NaN.
 */
export const MASKED_LOGIT = -1e9;

/** Allowed sets of one sequence, aligned with its input ids. */
export interface TokenMasks {
  /** Distinct bitmasks over the id space: bit (id & 31) of word (id >> 5) set = id allowed. */
  table: readonly Int32Array[];
  /** [T]: for column t (the distribution token t was drawn from) an index into table, -1 = unmasked. */
  index: ArrayLike<number>;
}

export const isAllowed = hasBit;

/** Bitmask -> bias row over the model's output rows (row r is token id keptIds[r], or r), word by word. */
export function biasRow(mask: Int32Array, rows: number, vocab: VocabMap | null, out: Float32Array): void {
  if (vocab) {
    for (let r = 0; r < rows; r++) out[r] = isAllowed(mask, vocab.keptIds[r]!) ? 0 : MASKED_LOGIT;
    return;
  }
  out.fill(MASKED_LOGIT);
  for (const r of bitIndices(mask, rows)) out[r] = 0;
}

/** The distinct masks of a batch padded to [B, T] and each position's, validated against the ids. */
export interface MaskIndex {
  /** Distinct bitmasks; equal masks of different sequences are merged (FNV-1a buckets, then compared). */
  table: Int32Array[];
  /** [B * (T - 1)]: position b*(T-1) + t-1 (it predicts token t): 0 = unmasked, 1 + k = table[k]. */
  index: Int32Array;
}

function maskHash(mask: Int32Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < mask.length; i++) h = Math.imul(h ^ mask[i]!, 0x01000193);
  return h >>> 0;
}

/** Null when no sequence is masked (the unconstrained path then runs exactly as before). */
export function maskIndex(
  masks: readonly (TokenMasks | null | undefined)[] | undefined,
  inputIds: readonly (readonly number[])[],
  T: number,
): MaskIndex | null {
  if (!masks || !masks.some((m) => m && m.table.length)) return null;
  const B = inputIds.length;
  if (masks.length !== B) throw new InputError(`token masks: ${masks.length} entries for ${B} sequences; one (or null) per sequence`);
  const table: Int32Array[] = [];
  const buckets = new Map<number, number[]>();
  const index = new Int32Array(B * (T - 1));
  masks.forEach((m, b) => {
    if (!m) return;
    const at = m.table.map((mask) => {
      const h = maskHash(mask);
      const bucket = buckets.get(h) ?? [];
      let k = bucket.find((i) => table[i]!.length === mask.length && table[i]!.every((x, j) => x === mask[j]));
      if (k === undefined) {
        k = table.push(mask) - 1;
        bucket.push(k);
        buckets.set(h, bucket);
      }
      return k;
    });
    if (m.index.length > T) throw new InputError(`token masks[${b}]: ${m.index.length} positions for a sequence padded to ${T}`);
    for (let t = 1; t < m.index.length; t++) {
      const k = m.index[t]!;
      if (k < -1 || k >= m.table.length) throw new InputError(`token masks[${b}].index[${t}] = ${k} is outside its table of ${m.table.length} masks`);
      // A token outside its own allowed set would score above 0: the masks are not the ones it was sampled under.
      if (k >= 0 && !isAllowed(m.table[k]!, inputIds[b]![t]!))
        throw new InputError(
          `token masks[${b}]: token ${inputIds[b]![t]} at position ${t} is not in its allowed set; replay the masks from the ids that were sampled`,
        );
      index[b * (T - 1) + (t - 1)] = k < 0 ? 0 : 1 + at[k]!;
    }
  });
  return { table, index };
}

export interface MaskBias {
  /** The distinct bitmasks over the id space (MaskIndex.table). */
  masks: readonly Int32Array[];
  /** The model's output rows and their token ids (null: row = id). */
  rows: number;
  vocab: VocabMap | null;
  /** [B * (T - 1)]: the mask of each scored position (position t-1 predicts token t): 0 = unmasked, 1 + k = masks[k]. */
  index: Int32Array;
  /** How the masked log-softmax runs (maskedPath); absent = by backend and size. */
  via?: MaskVia;
}

/** 'gather' / 'matmul': an [N, rows] bias built by a gather or a one-hot matmul (tableRows); 'sparse': none (masked-head.ts). */
export type MaskVia = 'gather' | 'matmul' | 'sparse';

/** Each position's mask and how to apply it; `via` forces a path (tests, benches). */
export function maskBias(mi: MaskIndex, rows: number, vocab: VocabMap | null, via?: MaskVia): MaskBias {
  return { masks: mi.table, rows, vocab, index: mi.index, ...(via ? { via } : {}) };
}

/**
 * From this many output rows on, the masked log-softmax runs without an [N, rows] bias
 * (masked-head.ts): at Qwen3's 151,936 rows the bias costs more than the step it guards and
 * the sparse path less than nothing (bench/trainer/mask-replay.ts). Below, the bias is cheap:
 * at the demo's 3,062 rows both paths' steps are within run-to-run noise of each other, and
 * the bias path keeps the demo's numbers those of earlier releases.
 */
export const SPARSE_MIN_ROWS = 16_384;

/** The path `bias` takes: its own, else sparse for a large head, else the backend's bias (one-hot matmul; a gather on cpu). */
export const maskedPath = (bias: MaskBias): MaskVia => bias.via ?? (bias.rows >= SPARSE_MIN_ROWS ? 'sparse' : biasVia());

/** How this backend builds an [N, rows] bias by default (tableRows). */
export const biasVia = (): 'gather' | 'matmul' => (tf.getBackend() === 'cpu' ? 'gather' : 'matmul');

/**
 * Rows `index` [N] of table [K, rows] -> [N, rows]. A gather on the cpu backend; elsewhere a
 * one-hot [N, K] @ table matmul, which gives the same bits (each sum has one nonzero term:
 * 1 * b + 0 * ... = b for b in {0, MASKED_LOGIT}) and on wasm runs as XNNPACK's SIMD matmul
 * instead of a scalar gather: 3x less time for the [N, rows] bias at 151,936 ids
 * (bench/trainer/mask-replay.ts). `via` forces one (tests, benches).
 */
export function tableRows(table: tf.Tensor2D, index: Int32Array, via: 'gather' | 'matmul' = biasVia()): tf.Tensor2D {
  const idx = tf.tensor1d(index, 'int32');
  if (via === 'gather') return tf.gather(table, idx) as tf.Tensor2D;
  // (int32 one-hot, then cast: the wasm kernel ignores oneHot's dtype and writes int32 bits)
  return tf.matMul(tf.cast(tf.oneHot(idx, table.shape[0]), 'float32'), table); // [N, K] @ [K, rows]
}

/** logits [N, rows] + the bias of each position: [N, rows] (no gradient flows into the bias). */
export function applyMaskBias(logits: tf.Tensor2D, bias: MaskBias, via: 'gather' | 'matmul' = biasVia()): tf.Tensor2D {
  const rows = logits.shape[1];
  const table = new Float32Array((bias.masks.length + 1) * rows); // [M + 1, rows]: row 0 all zeros (unmasked)
  bias.masks.forEach((mask, k) => biasRow(mask, rows, bias.vocab, table.subarray((1 + k) * rows, (2 + k) * rows)));
  return tf.add(logits, tableRows(tf.tensor2d(table, [bias.masks.length + 1, rows]), bias.index, via)) as tf.Tensor2D; // [N, rows]
}

/** The same bias for a subset of the positions (`at`: indices into bias.index), e.g. the scored ones. */
export function selectBias(bias: MaskBias, at: Int32Array): MaskBias {
  return { ...bias, index: Int32Array.from(at, (p) => bias.index[p]!) };
}

/** lse [N] of logits [N, V] and, with `withEntropy`, the entropy H = lse - sum_v p_v * logit_v [N]. */
export function logSoftmaxStats(logits: tf.Tensor2D, withEntropy: boolean): { lse: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const lse = logSumExpRows(logits); // [N]
  if (!withEntropy) return { lse };
  const p = tf.exp(tf.sub(logits, tf.expandDims(lse, -1)));
  return { lse, entropy: tf.sub(lse, tf.sum(tf.mul(p, logits), -1)) as tf.Tensor1D };
}
