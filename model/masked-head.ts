// The masked log-softmax without an [N, rows] bias (issue 22 item 2). At Qwen3's 151,936 rows
// the bias of token-masks.ts (an [N, rows] build and add) costs more than the trainer step it
// guards; a grammar's allowed sets are lopsided instead: structural positions allow a few ids
// (a key, a bracket, a digit), free text allows all but a few hundred to a few thousand (those
// that would close or break the string). So each distinct mask takes its cheap side (maskSide):
//
//   allowed (|A| <= SIDE_MAX): only rows of lm_head in the union U of such masks' allowed sets,
//       masked within U:  lse_A = logsumexp_{v in U} (h . W_v + bias_v)        exact, [n, |U|]
//   complement (|D| <= SIDE_MAX, D = the disallowed rows): the full row's lse, less the mass of
//       D, from the rows in the union U of such masks' D (a 0/1 [n, |U|] matrix picks each D):
//       x = sum_{v in D} exp(l_v - lse_all)     (the raw mass the mask removes)
//       lse_A = lse_all + log(1 - x);  E_A[l] = (E_all[l] - sum_{v in D} p_v l_v) / (1 - x)
//     1 - x loses digits as x -> 1, so a position with x > COMPLEMENT_MAX goes the dense way.
//   dense (both sides large, or x > COMPLEMENT_MAX): the full row plus its own bias row.
//
// The lm_head rows of a union are gathered once per call (a few thousand, not one gather per
// mask: tfjs wasm's gather is scalar). Same values as the bias path up to float32 rounding
// (tests/model/masked-head.test.ts, tests/model/token-masks.test.ts: logprobs, entropies and
// LoRA gradients, dense fallback included); the gradient flows through every part by autodiff.
import * as tf from '@tensorflow/tfjs';
import { bitIndices, countBits } from '../util/bits.ts';
import { frozenGather, gatherRows, headMatMul, headRowsMatMul, logSumExpRows } from './fused.ts';
import type { Qwen3Model } from './model.ts';
import { biasRow, isAllowed, logSoftmaxStats, MASKED_LOGIT, type MaskBias } from './token-masks.ts';
import type { VocabMap } from './vocab-map.ts';

/** A complement position whose disallowed ids hold more raw mass than this goes the dense way. */
export const COMPLEMENT_MAX = 0.5;

/** A mask whose allowed (or disallowed) rows are at most this many is computed on those rows; others are dense. */
export const SIDE_MAX = 4096;

export type Side = 'allowed' | 'complement' | 'dense';

/** Which side of `mask` is cheaper for a head of `rows` rows, and that side's rows (allowed, or disallowed). */
export function maskSide(mask: Int32Array, rows: number, vocab: VocabMap | null): { side: Side; rows: Int32Array } {
  const count = vocab ? vocab.keptIds.reduce((n, id) => n + (isAllowed(mask, id) ? 1 : 0), 0) : countBits(mask, rows);
  const side: Side = count <= Math.min(SIDE_MAX, rows / 2) ? 'allowed' : rows - count <= SIDE_MAX ? 'complement' : 'dense';
  if (side === 'dense') return { side, rows: new Int32Array(0) };
  const want = side === 'allowed';
  if (!vocab) return { side, rows: bitIndices(mask, rows, !want) };
  const out = new Int32Array(want ? count : rows - count);
  let n = 0;
  for (let r = 0; r < rows; r++) if (isAllowed(mask, vocab.keptIds[r]!) === want) out[n++] = r;
  return { side, rows: out };
}

/** The sorted union of some row sets, and for each of `pos` a [pos.length, |union|] matrix: `hit` where the position's own set holds the row, else `miss`. */
function unionRows(
  sets: readonly Int32Array[],
  rows: number,
  pos: readonly number[],
  setOf: (p: number) => Int32Array,
  hit: number,
  miss: number,
): { union: Int32Array; m: Float32Array } {
  const marked = new Uint8Array(rows);
  for (const s of sets) for (const r of s) marked[r] = 1;
  const union = Int32Array.from(marked.keys()).filter((r) => marked[r]);
  const col = new Int32Array(rows).fill(-1);
  union.forEach((r, j) => (col[r] = j));
  const m = new Float32Array(pos.length * union.length).fill(miss);
  pos.forEach((p, i) => {
    for (const r of setOf(p)) m[i * union.length + col[r]!] = hit;
  });
  return { union, m };
}

/**
 * h [n, D] through lm_head: every row [n, rows], or only rows `at` [n, |at|]. The head is
 * frozen: only h gets a gradient (tied: the backward multiplies by the embedding itself).
 */
export function lmHead(model: Qwen3Model, h: tf.Tensor2D, at?: Int32Array): tf.Tensor2D {
  const { embed, lmHeadT } = model.weights;
  if (!model.config.tieWordEmbeddings) return tf.matMul(h, at ? (frozenGather(lmHeadT, at, 1) as tf.Tensor2D) : lmHeadT);
  return at ? headRowsMatMul(h, lmHeadT, embed, at) : headMatMul(h, lmHeadT, embed);
}

/** E[l] under softmax(l) of rows whose lse is known, over the columns `w` weighs (1 = all): sum_v w_v exp(l_v - lse) l_v [n]. */
const meanLogit = (l: tf.Tensor2D, lse: tf.Tensor1D, w?: tf.Tensor2D): tf.Tensor1D => {
  const p = tf.exp(tf.sub(l, tf.expandDims(lse, -1)));
  return tf.sum(tf.mul(w ? tf.mul(p, w) : p, l), -1);
};

/** Values of some positions; a later part overrides an earlier one at the same position. */
interface Part {
  pos: ArrayLike<number>;
  lse: tf.Tensor1D;
  entropy?: tf.Tensor1D;
}

/**
 * The masked lse (and entropy) of N scored positions with hidden states hp [N, D], each
 * masked by bias.masks[bias.index[p] - 1] (0 = unmasked), with no [N, rows] bias.
 */
export function sparseMaskedStats(model: Qwen3Model, hp: tf.Tensor2D, bias: MaskBias, withEntropy: boolean): { lse: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const N = hp.shape[0];
  const rows = model.rows;
  const sides = new Map<number, { side: Side; rows: Int32Array }>();
  for (const k of bias.index) if (k > 0 && !sides.has(k)) sides.set(k, maskSide(bias.masks[k - 1]!, rows, bias.vocab));
  const sideOf = (p: number) => (bias.index[p]! > 0 ? sides.get(bias.index[p]!)!.side : 'unmasked');
  const setOf = (p: number) => sides.get(bias.index[p]!)!.rows;
  const at = (s: Side | 'unmasked') => [...Array(N).keys()].filter((p) => sideOf(p) === s);
  const rowsOf = (pos: readonly number[]) => (pos.length === N ? hp : (gatherRows(hp, Int32Array.from(pos)) as tf.Tensor2D)); // [n, D]
  const setsAt = (pos: readonly number[]) => [...new Set(pos.map((p) => bias.index[p]!))].map((k) => sides.get(k)!.rows);
  const parts: Part[] = [];

  // Unmasked and complement positions: the full row's lse, less the mass of the disallowed rows.
  const complement = at('complement');
  const full = [...Array(N).keys()].filter((p) => sideOf(p) === 'unmasked' || sideOf(p) === 'complement');
  const dense = at('dense');
  if (full.length) {
    const raw = lmHead(model, rowsOf(full)); // [nf, rows]
    const lseAll = logSumExpRows(raw); // [nf]
    const meanAll = withEntropy ? meanLogit(raw, lseAll) : undefined; // [nf]
    parts.push({ pos: full, lse: lseAll, ...(meanAll ? { entropy: tf.sub(lseAll, meanAll) as tf.Tensor1D } : {}) });
    if (complement.length) {
      const local = new Map(full.map((p, i) => [p, i]));
      const idx = Int32Array.from(complement, (p) => local.get(p)!);
      const { union, m } = unionRows(setsAt(complement), rows, complement, setOf, 1, 0);
      const denied = tf.tensor2d(m, [complement.length, union.length]); // [nc, |U|]: 1 = disallowed for this position
      const ld = lmHead(model, rowsOf(complement), union); // [nc, |U|]
      const la = gatherRows(lseAll, idx) as tf.Tensor1D; // [nc]
      const x = tf.sum(tf.mul(tf.exp(tf.sub(ld, tf.expandDims(la, -1))), denied), -1); // [nc] raw mass the mask removes
      x.dataSync().forEach((v, i) => v > COMPLEMENT_MAX && dense.push(complement[i]!));
      const keep = tf.sub(1, tf.minimum(x, COMPLEMENT_MAX)); // [nc] 1 - x, clamped: no NaN where the dense part overrides
      const lse = tf.add(la, tf.log(keep)) as tf.Tensor1D;
      const meanA = meanAll && tf.div(tf.sub(gatherRows(meanAll, idx), meanLogit(ld, la, denied)), keep);
      parts.push({ pos: complement, lse, ...(meanA ? { entropy: tf.sub(lse, meanA) as tf.Tensor1D } : {}) });
    }
  }
  // Allowed-side positions: only the union of their allowed rows, the others of it masked.
  const allowed = at('allowed');
  if (allowed.length) {
    const { union, m } = unionRows(setsAt(allowed), rows, allowed, setOf, 0, MASKED_LOGIT);
    parts.push({
      pos: allowed,
      ...logSoftmaxStats(tf.add(lmHead(model, rowsOf(allowed), union), tf.tensor2d(m, [allowed.length, union.length])) as tf.Tensor2D, withEntropy),
    });
  }
  // Masks with large sides both ways, and complement positions whose mask removes most of the mass: dense.
  if (dense.length) {
    const b = new Float32Array(dense.length * rows);
    dense.forEach((p, i) => biasRow(bias.masks[bias.index[p]! - 1]!, rows, bias.vocab, b.subarray(i * rows, (i + 1) * rows)));
    parts.push({ pos: dense, ...logSoftmaxStats(tf.add(lmHead(model, rowsOf(dense)), tf.tensor2d(b, [dense.length, rows])) as tf.Tensor2D, withEntropy) });
  }
  return assemble(parts, N, withEntropy);
}

/** Parts -> [N] in position order (the last part holding a position wins). */
function assemble(parts: Part[], N: number, withEntropy: boolean): { lse: tf.Tensor1D; entropy?: tf.Tensor1D } {
  if (parts.length === 1 && parts[0]!.pos.length === N) return parts[0]!;
  const slot = new Int32Array(N).fill(-1);
  let offset = 0;
  for (const part of parts) {
    for (let i = 0; i < part.pos.length; i++) slot[part.pos[i]!] = offset + i;
    offset += part.pos.length;
  }
  const pick = (xs: tf.Tensor1D[]) => gatherRows(tf.concat(xs), slot) as tf.Tensor1D;
  const lse = pick(parts.map((p) => p.lse));
  return withEntropy ? { lse, entropy: pick(parts.map((p) => p.entropy!)) } : { lse };
}
