// GRPO policy loss (method §5), in paper order:
//   rho_t  = exp(logp_t - oldLogp_t)
//   L_t    = -min(rho_t * A, clip(rho_t, 1 - eps, 1 + epsHigh) * A)
//   L_t   *= min(exp(oldLogp_t - rolloutLogp_t), tisCap)      (truncated IS, when tisCap set)
//   L_t   += betaKl * k3(ref, logp)                            (when betaKl > 0)
// then aggregated over the masked (policy-generated) tokens by `lossType` (TRL `loss_type`).
// Every tensor but `logp` is a constant: old / rollout / ref logprobs come from outside the
// current graph, so the TIS weight is detached by construction.
import * as tf from '@tensorflow/tfjs';
import type { GrpoConfig } from '../../configs/schema.ts';
import { assert } from '../../util/errors.ts';

export type LossType = GrpoConfig['lossType'];
export type LossAggregation = GrpoConfig['lossAggregation'];

export interface GrpoLossInput {
  logp: tf.Tensor2D; // [B, T] log pi_theta of each token (carries the gradient)
  oldLogp: tf.Tensor2D; // [B, T] log pi_old: the trainer's policy before this update
  /** [B] A_i, one per trajectory (every policy token of i gets A_i); or [B, T] per token (PPO's GAE, method §13). */
  advantages: tf.Tensor1D | tf.Tensor2D;
  mask: tf.Tensor2D; // [B, T] float, 1 on policy-generated completion tokens only
  refLogp?: tf.Tensor2D; // [B, T] reference policy (needed when betaKl > 0)
  rolloutLogp?: tf.Tensor2D; // [B, T] inference-server logprobs (needed when tisCap is set)
  /**
   * [B] policy tokens of each row's loss unit (lossType grpo): the row's own (turn), or all
   * turns of its trajectory in the whole update (trajectory; loss-units.ts). Default: the row's own.
   */
  unitTokens?: tf.Tensor1D;
}

/**
 * Normalizers of the whole (accumulated) batch. A micro-batch's loss divided by the global
 * normalizers sums, over micro-batches, to the full-batch loss for every loss type.
 */
export interface LossNormalizer {
  sequences: number; // loss units of the full batch: rows (turn) or trajectories (trajectory)
  tokens: number; // masked tokens of the full batch
}

export interface GrpoLossOptions {
  lossType: LossType;
  epsilon: number; // TRL `epsilon` (paper 0.2)
  epsilonHigh?: number; // TRL `epsilon_high`; defaults to epsilon
  betaKl: number; // TRL `beta`; 0 in the paper
  tisCap: number | null; // truncated importance-sampling cap; null = off
  /** dr_grpo only: the constant L in sum / (B * L) (TRL `max_completion_length`). */
  maxCompletionLength?: number;
  /** The unit of the loss (method §5.5); units are counted by loss-units.ts. Default `turn`. */
  aggregation?: LossAggregation;
  /** Defaults to this batch's own counts. */
  normalizer?: LossNormalizer;
}

/** Schulman's k3 estimator of KL(pi_theta || pi_ref) per token: exp(r) - r - 1, r = ref - logp. */
export function k3(refLogp: tf.Tensor2D, logp: tf.Tensor2D): tf.Tensor2D {
  const r = tf.sub(refLogp, logp);
  return tf.sub(tf.sub(tf.exp(r), r), 1) as tf.Tensor2D;
}

/** The advantages as a [B, 1] (per sequence) or [B, T] (per token) tensor that broadcasts over tokens. */
export const advantagesOf = (x: Pick<GrpoLossInput, 'advantages'>): tf.Tensor => (x.advantages.rank === 1 ? tf.expandDims(x.advantages, 1) : x.advantages);

/** Per-token loss L_t before masking and aggregation. */
export function grpoPerTokenLoss(x: GrpoLossInput, o: GrpoLossOptions): tf.Tensor2D {
  const epsHigh = o.epsilonHigh ?? o.epsilon;
  // Masked-out positions get log ratio 0 (rho = 1), so padding can never produce inf/NaN.
  const rho = tf.exp(tf.mul(tf.sub(x.logp, x.oldLogp), x.mask)); // [B, T]
  const adv = advantagesOf(x); // [B, 1] or [B, T]
  const surr1 = tf.mul(rho, adv); // [B, T]
  const surr2 = tf.mul(tf.clipByValue(rho, 1 - o.epsilon, 1 + epsHigh), adv); // [B, T]
  let loss = tf.neg(tf.minimum(surr1, surr2)); // [B, T]
  if (o.tisCap !== null) {
    assert(x.rolloutLogp, 'grpoPerTokenLoss: tisCap is set but rolloutLogp is missing');
    const w = tf.minimum(tf.exp(tf.mul(tf.sub(x.oldLogp, x.rolloutLogp), x.mask)), o.tisCap); // [B, T]
    loss = tf.mul(loss, w);
  }
  if (o.betaKl > 0) {
    assert(x.refLogp, 'grpoPerTokenLoss: betaKl > 0 but refLogp is missing');
    loss = tf.add(loss, tf.mul(k3(tf.mul(x.refLogp, x.mask) as tf.Tensor2D, tf.mul(x.logp, x.mask) as tf.Tensor2D), o.betaKl));
  }
  return loss as tf.Tensor2D;
}

/** Aggregate masked per-token losses [B, T] into a scalar (TRL `loss_type`). */
export function aggregateLoss(perToken: tf.Tensor2D, mask: tf.Tensor2D, o: GrpoLossOptions, unitTokens?: tf.Tensor1D): tf.Scalar {
  const n = o.normalizer ?? { sequences: perToken.shape[0], tokens: tf.sum(mask).arraySync() as number };
  const masked = tf.mul(perToken, mask); // [B, T]
  switch (o.lossType) {
    case 'grpo': {
      // mean over each unit's tokens (a row's own, or its trajectory's), then mean over the units
      const perSeq = tf.div(tf.sum(masked, 1), tf.maximum(unitTokens ?? tf.sum(mask, 1), 1)); // [B]
      return tf.div(tf.sum(perSeq), Math.max(n.sequences, 1));
    }
    case 'bnpo':
    case 'dapo':
      // token mean over the whole accumulated batch
      return tf.div(tf.sum(masked), Math.max(n.tokens, 1));
    case 'dr_grpo': {
      // constant normalizer: no length bias (Dr. GRPO)
      assert(o.maxCompletionLength !== undefined && o.maxCompletionLength > 0, 'dr_grpo needs maxCompletionLength > 0');
      return tf.div(tf.sum(masked), n.sequences * o.maxCompletionLength);
    }
    default: {
      const never: never = o.lossType;
      throw new Error(`internal: unknown lossType ${String(never)}`);
    }
  }
}

/** The GRPO loss scalar (method §5). */
export function grpoLoss(x: GrpoLossInput, o: GrpoLossOptions): tf.Scalar {
  return tf.tidy(() => aggregateLoss(grpoPerTokenLoss(x, o), x.mask, o, x.unitTokens));
}
