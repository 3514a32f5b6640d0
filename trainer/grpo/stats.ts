// Per-update diagnostics of the GRPO loss (method §5 metrics, TRL names). Kept as token
// *sums* so micro-batches add up exactly; `grpoStatMeans` turns them into the logged means
// (masked token means over the whole batch, as TRL's masked_batch_mean).
import * as tf from '@tensorflow/tfjs';
import { advantagesOf, k3, type GrpoLossInput, type GrpoLossOptions } from './loss.ts';

export interface GrpoTokenSums {
  tokens: number; // masked (policy) tokens
  lowClipped: number; // rho < 1 - eps with A < 0 (the clip binds from below)
  highClipped: number; // rho > 1 + epsHigh with A > 0 (the clip binds from above)
  approxKl: number; // sum of k3(old, new): how far this update moved from pi_old
  kl: number; // sum of k3(ref, new); 0 when betaKl = 0
  entropy: number; // sum of per-token entropy; 0 when not given
  /**
   * Server vs trainer (when the rollout logprobs are given): sum of exp(logp - rolloutLogp)
   * and the largest |logp - rolloutLogp| over policy tokens. At policy lag 0 both score the
   * same policy, so the ratio is 1 up to float rounding, also for grammar-constrained turns
   * when the trainer applies the server's mask (model/token-masks.ts); scoring those under
   * the raw distribution would pull it below 1.
   */
  samplingRatio: number;
  samplingDiffMax: number;
}

export const ZERO_SUMS: GrpoTokenSums = { tokens: 0, lowClipped: 0, highClipped: 0, approxKl: 0, kl: 0, entropy: 0, samplingRatio: 0, samplingDiffMax: 0 };

export function addSums(a: GrpoTokenSums, b: GrpoTokenSums): GrpoTokenSums {
  return {
    tokens: a.tokens + b.tokens,
    lowClipped: a.lowClipped + b.lowClipped,
    highClipped: a.highClipped + b.highClipped,
    approxKl: a.approxKl + b.approxKl,
    kl: a.kl + b.kl,
    entropy: a.entropy + b.entropy,
    samplingRatio: a.samplingRatio + b.samplingRatio,
    samplingDiffMax: Math.max(a.samplingDiffMax, b.samplingDiffMax),
  };
}

/** Token sums of the clip / KL / entropy diagnostics for one (micro-)batch. Reads back numbers. */
export function grpoTokenSums(x: GrpoLossInput, o: GrpoLossOptions, entropy?: tf.Tensor2D): GrpoTokenSums {
  const epsHigh = o.epsilonHigh ?? o.epsilon;
  const values = tf.tidy(() => {
    const logRatio = tf.mul(tf.sub(x.logp, x.oldLogp), x.mask); // [B, T]
    const rho = tf.exp(logRatio);
    const adv = advantagesOf(x); // [B, 1] or [B, T]
    const low = tf.logicalAnd(tf.less(rho, 1 - o.epsilon), tf.less(adv, 0)); // [B, T]
    const high = tf.logicalAnd(tf.greater(rho, 1 + epsHigh), tf.greater(adv, 0)); // [B, T]
    const msum = (t: tf.Tensor) => tf.sum(tf.mul(tf.cast(t, 'float32'), x.mask));
    const approxKl = k3(tf.mul(x.oldLogp, x.mask) as tf.Tensor2D, tf.mul(x.logp, x.mask) as tf.Tensor2D);
    const kl = x.refLogp ? k3(tf.mul(x.refLogp, x.mask) as tf.Tensor2D, tf.mul(x.logp, x.mask) as tf.Tensor2D) : tf.zerosLike(x.mask);
    const ent = entropy ?? tf.zerosLike(x.mask);
    const diff = x.rolloutLogp ? tf.mul(tf.sub(x.logp, x.rolloutLogp), x.mask) : tf.zerosLike(x.mask); // [B, T], 0 off the mask
    const ratio = x.rolloutLogp ? msum(tf.exp(diff)) : tf.scalar(0);
    return tf.stack([tf.sum(x.mask), msum(low), msum(high), msum(approxKl), msum(kl), msum(ent), ratio, tf.max(tf.abs(diff))]).dataSync();
  });
  const [tokens, lowClipped, highClipped, approxKl, kl, ent, ratio, diffMax] = Array.from(values) as number[];
  return {
    tokens: tokens!,
    lowClipped: lowClipped!,
    highClipped: highClipped!,
    approxKl: approxKl!,
    kl: kl!,
    entropy: ent!,
    samplingRatio: ratio!,
    samplingDiffMax: diffMax!,
  };
}

/** Logged means (TRL names). */
export function grpoStatMeans(s: GrpoTokenSums): Record<string, number> {
  const n = Math.max(s.tokens, 1);
  return {
    'clip_ratio/low_mean': s.lowClipped / n,
    'clip_ratio/high_mean': s.highClipped / n,
    'clip_ratio/region_mean': (s.lowClipped + s.highClipped) / n,
    approx_kl: s.approxKl / n,
    kl: s.kl / n,
    entropy: s.entropy / n,
    // TRL's names for the vLLM/trainer mismatch diagnostics
    'sampling/importance_sampling_ratio/mean': s.samplingRatio / n,
    'sampling/logprob_diff/max': s.samplingDiffMax,
  };
}
