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
// of its distinct bitmasks and a per-position index into it. The bias is gathered from a
// [M, rows] table of the M distinct masks of a micro-batch: memory M*rows + N*rows floats,
// the second term the size of the logits themselves (trainer/plan.ts counts both), which
// holds for the full 151,936-id vocabulary as well as for trimmed ones.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
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

export const isAllowed = (mask: Int32Array, id: number): boolean => ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;

/** Bitmask [rows] -> bias row over the model's output rows (row r is token id keptIds[r], or r). */
function biasRow(mask: Int32Array, rows: number, vocab: VocabMap | null, out: Float32Array): void {
  for (let r = 0; r < rows; r++) out[r] = isAllowed(mask, vocab ? vocab.keptIds[r]! : r) ? 0 : MASKED_LOGIT;
}

export interface MaskBias {
  /** [M + 1, rows]: row 0 all zeros (unmasked), row 1 + m the bias of distinct mask m. */
  table: Float32Array;
  /** [B * (T - 1)]: the bias row of each scored position (position t-1 predicts token t). */
  index: Int32Array;
  distinct: number;
}

/**
 * The bias table and per-position rows for a batch padded to [B, T]; null when no sequence is
 * masked (the unconstrained path then runs exactly as before). Masks of different
 * sequences are not merged even when equal: the table is still bounded by the positions.
 */
export function maskBias(masks: readonly (TokenMasks | null | undefined)[] | undefined, inputIds: readonly (readonly number[])[], T: number, rows: number, vocab: VocabMap | null): MaskBias | null {
  if (!masks || !masks.some((m) => m && m.table.length)) return null;
  const B = inputIds.length;
  if (masks.length !== B) throw new InputError(`token masks: ${masks.length} entries for ${B} sequences; one (or null) per sequence`);
  const offsets: number[] = [];
  let distinct = 0;
  for (const m of masks) {
    offsets.push(distinct);
    distinct += m?.table.length ?? 0;
  }
  const table = new Float32Array((distinct + 1) * rows);
  const index = new Int32Array(B * (T - 1));
  masks.forEach((m, b) => {
    if (!m) return;
    m.table.forEach((mask, k) => biasRow(mask, rows, vocab, table.subarray((1 + offsets[b]! + k) * rows, (2 + offsets[b]! + k) * rows)));
    if (m.index.length > T) throw new InputError(`token masks[${b}]: ${m.index.length} positions for a sequence padded to ${T}`);
    for (let t = 1; t < m.index.length; t++) {
      const k = m.index[t]!;
      if (k < -1 || k >= m.table.length) throw new InputError(`token masks[${b}].index[${t}] = ${k} is outside its table of ${m.table.length} masks`);
      // A token outside its own allowed set would score above 0: the masks are not the ones it was sampled under.
      if (k >= 0 && !isAllowed(m.table[k]!, inputIds[b]![t]!))
        throw new InputError(`token masks[${b}]: token ${inputIds[b]![t]} at position ${t} is not in its allowed set; replay the masks from the ids that were sampled`);
      index[b * (T - 1) + (t - 1)] = k < 0 ? 0 : 1 + offsets[b]! + k;
    }
  });
  return { table, index, distinct };
}

/** logits [N, rows] + the bias of each position: [N, rows] (no gradient flows into the bias). */
export function applyMaskBias(logits: tf.Tensor2D, bias: MaskBias): tf.Tensor2D {
  const rows = logits.shape[1];
  const table = tf.tensor2d(bias.table, [bias.distinct + 1, rows]); // [M + 1, rows]
  return tf.add(logits, tf.gather(table, tf.tensor1d(bias.index, 'int32'))) as tf.Tensor2D; // [N, rows]
}

/** The same bias for a subset of the positions (`at`: indices into bias.index), e.g. the scored ones. */
export function selectBias(bias: MaskBias, at: Int32Array): MaskBias {
  return { ...bias, index: Int32Array.from(at, (p) => bias.index[p]!) };
}
