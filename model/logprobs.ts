// Per-token log-probabilities of given token ids (the trainer's score, method §5/§9).
// log p(id_t | id_<t) = logit[id_t] - logsumexp(logits): the target logit is the dot
// product of the hidden state with the target's lm_head row (a gather of a frozen tensor),
// so no [N, V] one-hot is built and no gather gradient is needed (the wasm backend has
// none; method §14.1). Constrained (grammar-masked) sequences are scored under the masked,
// renormalised distribution they were sampled from (token-masks.ts): the logsumexp and the
// entropy run over each position's allowed ids only; unmasked sequences are untouched.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
import type { LoraAdapter } from './lora/types.ts';
import type { Qwen3Model } from './model.ts';
import { frozenGather, gatherRows, scatterRows } from './fused.ts';
import { runStack } from './stack.ts';
import { lmHead, sparseMaskedStats } from './masked-head.ts';
import { applyMaskBias, logSoftmaxStats, maskBias, maskedPath, maskIndex, selectBias, type MaskBias, type MaskVia, type TokenMasks } from './token-masks.ts';
import type { VocabMap } from './vocab-map.ts';
import { idsToRows } from './vocab-map.ts';

export interface LogprobOptions {
  /** Enables LoRA dropout, seeded by dropoutSeed. */
  training?: boolean;
  dropoutSeed?: number;
  /** Per-layer activation recomputation (same gradients, less memory). */
  recompute?: boolean;
  /** Also return the entropy of each predictive distribution. */
  withEntropy?: boolean;
  /**
   * How masked sequences are scored (the same values up to float32 rounding): 'gather'
   * (before issue 22: the benches' baseline) or 'matmul' add an [N, V] bias built by a gather
   * or a one-hot matmul (token-masks.ts tableRows); 'sparse' builds none (masked-head.ts);
   * 'auto' (default): sparse from SPARSE_MIN_ROWS output rows on, else the backend's bias
   * (a one-hot matmul, a gather on cpu).
   */
  maskPath?: 'auto' | MaskVia;
}

export interface LogprobResult {
  /** [B, T]: column t = log p(inputIds[b][t] | inputIds[b][<t]); column 0 is 0. */
  logprobs: tf.Tensor2D;
  /** [B, T]: entropy of the distribution column t was drawn from; column 0 is 0. */
  entropy?: tf.Tensor2D;
}

/** Ragged batch -> right-padded rows [B, T] (pad with row 0; the caller masks padding). */
function padRows(model: Qwen3Model, inputIds: number[][]): { rows: Int32Array; B: number; T: number } {
  const B = inputIds.length;
  const T = Math.max(0, ...inputIds.map((s) => s.length));
  if (B === 0 || T === 0) throw new InputError('tokenLogprobs: the batch is empty (no sequences or only empty ones)');
  if (T > model.config.maxPositionEmbeddings)
    throw new InputError(`tokenLogprobs: sequence length ${T} exceeds max_position_embeddings ${model.config.maxPositionEmbeddings}`);
  const rows = new Int32Array(B * T);
  inputIds.forEach((seq, b) => rows.set(idsToRows(model.vocab, seq, model.config.vocabSize), b * T));
  return { rows, B, T };
}

export interface ScoreBatch {
  inputIds: number[][];
  /** Per sequence: the allowed sets it was sampled under, or null/absent = unconstrained. */
  masks?: readonly (TokenMasks | null | undefined)[];
  /**
   * Per sequence, the columns whose logprob (and entropy) is needed: nonzero = scored. The
   * others come back 0 and skip lm_head and the log-softmax, which dominate at a 151,936-id
   * vocabulary (issue 17). Absent = every column.
   */
  scored?: readonly ArrayLike<number>[];
}

/** The scored columns t >= 1 of a batch padded to [B, T] (position t-1 predicts token t). */
export interface Scored {
  h: Int32Array; // [N] row b*T + t-1 of the hidden states
  out: Int32Array; // [N] element b*T + t of the [B, T] result (also the target's row id)
  bias: Int32Array; // [N] position b*(T-1) + t-1 of maskBias' index
}

function scoredColumns(scored: readonly ArrayLike<number>[], B: number, T: number): Scored {
  if (scored.length !== B) throw new InputError(`tokenLogprobs: ${scored.length} scored rows for ${B} sequences; one per sequence`);
  const h: number[] = [];
  const bias: number[] = [];
  scored.forEach((row, b) => {
    for (let t = 1; t < Math.min(row.length, T); t++) if (row[t]) h.push(b * T + t - 1), bias.push(b * (T - 1) + t - 1);
  });
  return { h: Int32Array.from(h), out: Int32Array.from(h, (i) => i + 1), bias: Int32Array.from(bias) };
}

export function tokenLogprobs(model: Qwen3Model, adapter: LoraAdapter | null, batch: ScoreBatch, opts: LogprobOptions = {}): LogprobResult {
  const { rows, B, T } = padRows(model, batch.inputIds);
  const mi = T > 1 ? maskIndex(batch.masks, batch.inputIds, T) : null;
  const cols = batch.scored && T > 1 ? scoredColumns(batch.scored, B, T) : null;
  const fullBias = mi ? maskBias(mi, model.rows, model.vocab, opts.maskPath === 'auto' ? undefined : opts.maskPath) : null;
  const bias = fullBias && cols ? selectBias(fullBias, cols.bias) : fullBias;
  return tf.tidy(() => {
    const rowsT = tf.tensor2d(rows, [B, T], 'int32');
    const D = model.config.hiddenSize;
    const N = cols ? cols.h.length : B * (T - 1);
    if (N === 0) {
      // Nothing scored (T = 1 or no scored column): no forward; the result does not depend on the adapter.
      const zeros = tf.zeros([B, T]) as tf.Tensor2D;
      return opts.withEntropy ? { logprobs: zeros, entropy: tf.zeros([B, T]) as tf.Tensor2D } : { logprobs: zeros };
    }
    const h = runStack(model, adapter, rowsT, opts); // [B*T, D]
    // Position t-1 predicts token t: only scored positions (all but the last, without
    // `scored`) go through lm_head.
    const hp = (cols ? gatherRows(h, cols.h) : tf.reshape(tf.slice(tf.reshape(h, [B, T, D]), [0, 0, 0], [B, T - 1, D]), [N, D])) as tf.Tensor2D; // [N, D]
    const targets = cols
      ? tf.tensor1d(
          Int32Array.from(cols.out, (i) => rows[i]!),
          'int32',
        )
      : tf.reshape(tf.slice(rowsT, [0, 1], [B, T - 1]), [N]); // [N]
    // [N] -> [B, T] with column 0 (and unscored columns) 0
    const place = (v: tf.Tensor): tf.Tensor2D =>
      (cols ? tf.reshape(scatterRows(v, cols.out, B * T), [B, T]) : tf.concat([tf.zeros([B, 1]), tf.reshape(v, [B, T - 1])], 1)) as tf.Tensor2D;
    const head = headLogprobs(model, hp, targets as tf.Tensor1D, bias, opts.withEntropy ?? false);
    return head.entropy ? { logprobs: place(head.logprobs), entropy: place(head.entropy) } : { logprobs: place(head.logprobs) };
  });
}

/**
 * lm_head, log-softmax and (optionally) entropy of N scored positions: hidden states
 * hp [N, D] and the target row ids [N] -> logprobs [N] (and entropy [N]). Constrained
 * positions are masked by `bias` (each position's mask, applied as an [N, rows] bias or by the
 * sparse path, maskedPath); null: unmasked.
 */
export function headLogprobs(
  model: Qwen3Model,
  hp: tf.Tensor2D,
  targets: tf.Tensor1D,
  bias: MaskBias | null,
  withEntropy: boolean,
): { logprobs: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const { lmHeadT } = model.weights;
  const via = bias ? maskedPath(bias) : null;
  // [N]; masked where constrained
  const { lse, entropy } = !bias
    ? logSoftmaxStats(lmHead(model, hp), withEntropy)
    : via === 'sparse'
      ? sparseMaskedStats(model, hp, bias, withEntropy)
      : logSoftmaxStats(applyMaskBias(lmHead(model, hp), bias, via ?? undefined), withEntropy);
  const targetRows = tf.transpose(frozenGather(lmHeadT, targets, 1)); // [N, D]
  const targetLogit = tf.sum(tf.mul(hp, targetRows), -1); // [N]
  const logprobs = tf.sub(targetLogit, lse) as tf.Tensor1D;
  return entropy ? { logprobs, entropy } : { logprobs };
}
