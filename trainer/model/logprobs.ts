// Per-token log-probabilities of given token ids (the trainer's score, SPEC §5/§9).
// log p(id_t | id_<t) = logit[id_t] - logsumexp(logits): the target logit is the dot
// product of the hidden state with the target's lm_head row (a gather of a frozen tensor),
// so no [N, V] one-hot is built and no gather gradient is needed (the wasm backend has
// none; NOTES.md). Constrained (grammar-masked) sequences are scored under the masked,
// renormalised distribution they were sampled from (token-masks.ts): the logsumexp and the
// entropy run over each position's allowed ids only; unmasked sequences are untouched.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../../util/errors.ts';
import type { LoraAdapter } from '../lora/types.ts';
import type { Qwen3Model } from './model.ts';
import { headMatMul, logSumExpRows } from './fused.ts';
import { runStack } from './stack.ts';
import { applyMaskBias, maskBias, type TokenMasks } from './token-masks.ts';
import { idsToRows } from './vocab-map.ts';

export interface LogprobOptions {
  /** Enables LoRA dropout, seeded by dropoutSeed. */
  training?: boolean;
  dropoutSeed?: number;
  /** Per-layer activation recomputation (same gradients, less memory). */
  recompute?: boolean;
  /** Also return the entropy of each predictive distribution. */
  withEntropy?: boolean;
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
}

export function tokenLogprobs(model: Qwen3Model, adapter: LoraAdapter | null, batch: ScoreBatch, opts: LogprobOptions = {}): LogprobResult {
  const { rows, B, T } = padRows(model, batch.inputIds);
  const bias = T > 1 ? maskBias(batch.masks, batch.inputIds, T, model.rows, model.vocab) : null;
  return tf.tidy(() => {
    const rowsT = tf.tensor2d(rows, [B, T], 'int32');
    const D = model.config.hiddenSize;
    const h = runStack(model, adapter, rowsT, opts); // [B*T, D]
    if (T === 1) {
      const zeros = tf.zeros([B, 1]) as tf.Tensor2D;
      return opts.withEntropy ? { logprobs: zeros, entropy: tf.zeros([B, 1]) as tf.Tensor2D } : { logprobs: zeros };
    }
    // Position t-1 predicts token t: only the first T-1 positions go through lm_head.
    const hp = tf.reshape(tf.slice(tf.reshape(h, [B, T, D]), [0, 0, 0], [B, T - 1, D]), [B * (T - 1), D]); // [N, D]
    const targets = tf.reshape(tf.slice(rowsT, [0, 1], [B, T - 1]), [B * (T - 1)]); // [N]
    const { embed, lmHeadT } = model.weights;
    // [N, rows]; tied: backward multiplies by the embedding itself
    const raw = model.config.tieWordEmbeddings ? headMatMul(hp as tf.Tensor2D, lmHeadT, embed) : tf.matMul(hp, lmHeadT);
    const logits = bias ? applyMaskBias(raw as tf.Tensor2D, bias) : raw; // [N, rows], masked where constrained
    const lse = logSumExpRows(logits as tf.Tensor2D); // [N]
    const targetRows = tf.transpose(tf.gather(model.weights.lmHeadT, targets, 1)); // [N, D]
    const targetLogit = tf.sum(tf.mul(hp, targetRows), -1); // [N]
    const pad = tf.zeros([B, 1]);
    const logprobs = tf.concat([pad, tf.reshape(tf.sub(targetLogit, lse), [B, T - 1])], 1) as tf.Tensor2D;
    if (!opts.withEntropy) return { logprobs };
    // H = lse - sum_v p_v * logit_v
    const p = tf.exp(tf.sub(logits, tf.expandDims(lse, -1)));
    const ent = tf.sub(lse, tf.sum(tf.mul(p, logits), -1));
    return { logprobs, entropy: tf.concat([pad, tf.reshape(ent, [B, T - 1])], 1) as tf.Tensor2D };
  });
}
