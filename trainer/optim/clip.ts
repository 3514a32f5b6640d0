// Global gradient-norm clipping as torch.nn.utils.clip_grad_norm_ (TRL max_grad_norm = 1.0):
// norm = sqrt(sum_i ||g_i||^2); every grad is scaled by min(1, maxNorm / (norm + 1e-6)).
// Returns the *pre-clip* norm, which is what TRL logs as grad_norm.
import * as tf from '@tensorflow/tfjs';

export function globalNorm(grads: readonly tf.Tensor[]): number {
  if (grads.length === 0) return 0;
  return tf.tidy(() => tf.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g))))).dataSync()[0]!);
}

/** New clipped tensors (the caller disposes both the inputs and the outputs). */
export function clipGradNorm(grads: readonly tf.Tensor[], maxNorm: number): { grads: tf.Tensor[]; norm: number } {
  const norm = globalNorm(grads);
  const coef = Math.min(1, maxNorm / (norm + 1e-6));
  return { grads: grads.map((g) => tf.mul(g, coef)), norm };
}
