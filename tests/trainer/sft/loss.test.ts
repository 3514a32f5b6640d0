import { describe, it, expect } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { sftLoss } from '../../../trainer/sft/loss.ts';

await tf.setBackend('cpu');

describe('sftLoss', () => {
  it('is minus the mean logprob over the target tokens', () => {
    // target tokens: ln 0.5, ln 0.25 (row 0) and ln 0.125 (row 1)
    // loss = -(ln .5 + ln .25 + ln .125) / 3 = (1 + 2 + 3) ln 2 / 3 = 2 ln 2 = 1.3862944
    const logp = tf.tensor2d([
      [0, Math.log(0.5), Math.log(0.25)],
      [0, Math.log(0.125), -9],
    ]);
    const mask = tf.tensor2d([
      [0, 1, 1],
      [0, 1, 0],
    ]);
    expect(sftLoss(logp, mask).dataSync()[0]).toBeCloseTo(2 * Math.LN2, 5);
  });

  it('with a global token count, micro-batch losses sum to the full-batch loss', () => {
    const rows = [
      [0, -1, -2],
      [0, -3, -9],
    ];
    const masks = [
      [0, 1, 1],
      [0, 1, 0],
    ];
    const full = sftLoss(tf.tensor2d(rows), tf.tensor2d(masks)).dataSync()[0]!;
    const parts = [0, 1].map((b) => sftLoss(tf.tensor2d([rows[b]!]), tf.tensor2d([masks[b]!]), 3).dataSync()[0]!);
    expect(full).toBeCloseTo(2, 5); // (1 + 2 + 3) / 3
    expect(parts[0]! + parts[1]!).toBeCloseTo(full, 5);
  });

  it('gradient is -1/N on target tokens and 0 elsewhere', () => {
    const mask = tf.tensor2d([[0, 1, 1, 1]]);
    const g = tf.grad((lp: tf.Tensor) => sftLoss(lp as tf.Tensor2D, mask))(tf.tensor2d([[0, -1, -1, -1]]));
    const d = g.dataSync();
    expect(Math.abs(d[0]!)).toBe(0);
    for (const t of [1, 2, 3]) expect(d[t]).toBeCloseTo(-1 / 3, 6);
  });
});
