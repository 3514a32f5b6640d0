// Identity with a zero gradient (torch's `.detach()`; tfjs has no public stopGradient).
// On-policy GRPO with one update per batch uses logp_old = detach(logp_theta), so the
// ratio is 1 in value but its gradient is the policy gradient (TRL does the same).
import * as tf from '@tensorflow/tfjs';

const detachOp = tf.customGrad((x) => ({
  value: tf.clone(x as tf.Tensor),
  gradFunc: (dy: tf.Tensor) => [tf.zerosLike(dy)],
}));

export function detach<T extends tf.Tensor>(x: T): T {
  return detachOp(x) as T;
}
