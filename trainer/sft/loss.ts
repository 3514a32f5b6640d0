// SFT loss (method §7): token cross-entropy on the masked target tokens (Plan + Action +
// Execute of the next step), i.e. minus the mean logprob of the target tokens.
import * as tf from '@tensorflow/tfjs';

/**
 * logp: [B, T] log pi_theta of each token; mask: [B, T] float, 1 on target tokens.
 * `tokens` is the target-token count of the whole accumulated batch (default: this batch),
 * so micro-batch losses sum to the full-batch mean.
 */
export function sftLoss(logp: tf.Tensor2D, mask: tf.Tensor2D, tokens?: number): tf.Scalar {
  return tf.tidy(() => {
    const n = tokens ?? (tf.sum(mask).arraySync() as number);
    return tf.div(tf.neg(tf.sum(tf.mul(logp, mask))), Math.max(n, 1));
  });
}
