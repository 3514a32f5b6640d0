// Tinker's built-in losses (trainer/engine/losses.ts) against values and gradients worked by
// hand from the definitions in tinker-docs.thinkingmachines.ai/losses (sums over tokens).
// p = target logprobs, q = sampling logprobs, A = advantages, w = weights, r = exp(p - q):
//   p = [-1, -2, -1.4], q = [-1.5, -1.5, -1.5], A = [2, -1, 1], w = [1, 0.5, 0]
//   r = [e^0.5, e^-0.5, e^0.1] = [1.6487213, 0.6065307, 1.1051709]
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { elementwiseLoss, lossConfig } from '../../../trainer/engine/losses.ts';
import type { TinkerLossFn } from '../../../trainer/engine/types.ts';

await tf.setBackend('cpu');

const P = [-1, -2, -1.4];
const x = () => ({ logprobs: tf.tensor1d([-1.5, -1.5, -1.5]), advantages: tf.tensor1d([2, -1, 1]), weights: tf.tensor1d([1, 0.5, 0]) });

/** Elementwise loss and d(sum)/dp at P. */
function run(fn: TinkerLossFn, config?: Record<string, number>): { loss: number[]; grad: number[] } {
  const cfg = lossConfig(fn, config);
  const inputs = x();
  const p = tf.tensor1d(P);
  const loss = Array.from(elementwiseLoss(fn, p, inputs, cfg).dataSync());
  const grad = Array.from(
    tf
      .grad((t: tf.Tensor) => tf.sum(elementwiseLoss(fn, t, inputs, cfg)))(p)
      .dataSync(),
  );
  return { loss, grad };
}
const close = (got: number[], want: number[]) => want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, 5));

describe('Tinker built-in losses', () => {
  it('cross_entropy: -p * w, gradient -w', () => {
    const r = run('cross_entropy');
    close(r.loss, [1, 1, 0]);
    close(r.grad, [-1, -0.5, 0]);
  });

  it('importance_sampling: -r * A, gradient -r * A', () => {
    const r = run('importance_sampling');
    close(r.loss, [-3.2974425, 0.6065307, -1.1051709]);
    close(r.grad, [-3.2974425, 0.6065307, -1.1051709]);
  });

  it('ppo at the documented thresholds 0.8 / 1.2: positions 0 and 1 clip (no gradient), 2 does not', () => {
    const r = run('ppo');
    // pos 0: min(3.297, 1.2 * 2) = 2.4; pos 1: min(-0.607, 0.8 * -1) = -0.8; pos 2: r * 1
    close(r.loss, [-2.4, 0.8, -1.1051709]);
    close(r.grad, [0, 0, -1.1051709]);
  });

  it('ppo with loss_fn_config thresholds 0.5 / 2: nothing clips, so it is importance_sampling', () => {
    const r = run('ppo', { clip_low_threshold: 0.5, clip_high_threshold: 2 });
    close(r.loss, [-3.2974425, 0.6065307, -1.1051709]);
    close(r.grad, [-3.2974425, 0.6065307, -1.1051709]);
  });

  it('cispo: -sg(clip(r)) * p * A, gradient -clip(r) * A (the ratio carries none)', () => {
    const r = run('cispo');
    close(r.loss, [2.4, -1.6, 1.5472393]);
    close(r.grad, [-2.4, 0.8, -1.1051709]);
  });

  it('dro (beta 0.1): -(p * A - 0.05 (p - q)^2), gradient -(A - 0.1 (p - q))', () => {
    const r = run('dro', { beta: 0.1 });
    close(r.loss, [2.0125, -1.9875, 1.4005]);
    close(r.grad, [-1.95, 0.95, -0.99]);
  });

  it('loss_fn_config: defaults, unknown keys, a missing dro beta and crossed thresholds are refused with the fix', () => {
    expect(lossConfig('ppo')).toEqual({ clip_low_threshold: 0.8, clip_high_threshold: 1.2 });
    expect(lossConfig('cispo', { clip_high_threshold: 1.3 })).toEqual({ clip_low_threshold: 0.8, clip_high_threshold: 1.3 });
    expect(() => lossConfig('ppo', { epsilon: 0.2 })).toThrow(
      /loss_fn_config.epsilon = 0.2: ppo reads clip_low_threshold, clip_high_threshold; remove the key/,
    );
    expect(() => lossConfig('dro')).toThrow(/loss_fn_config.beta is missing: dro has no documented default/);
    expect(() => lossConfig('ppo', { clip_low_threshold: 1.3 })).toThrow(/clip_low_threshold 1.3 is above clip_high_threshold 1.2/);
    expect(() => lossConfig('cross_entropy', { beta: 1 })).toThrow(/cross_entropy reads no config/);
  });
});
