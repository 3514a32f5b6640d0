// The critic in tfjs (trainer/ppo/critic.ts): the clipped value loss against numbers worked by
// hand and against the pure reference (value-loss.ts), the value head's gradient against
// central finite differences of a float64 reimplementation, and the per-token advantages in
// the policy loss.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { clippedValueLossTf, valueHead } from '../../../trainer/ppo/critic.ts';
import { clippedValueLoss } from '../../../trainer/ppo/value-loss.ts';
import { grpoLoss } from '../../../trainer/grpo/loss.ts';

const t2 = (x: number[][]) => tf.tensor2d(x, undefined, 'float32');

describe('clippedValueLossTf', () => {
  // row 0: t0 V 1.0 old 0.5 G 2: V_clip = 0.5 + clip(0.5, ±0.2) = 0.7; (1-2)^2 = 1 < (0.7-2)^2 = 1.69 -> 1.69, clipped
  //        t1 V 2.0 old 2.5 G 1: V_clip = 2.3; (2-1)^2 = 1 < (2.3-1)^2 = 1.69                         -> 1.69, clipped
  //        t2 masked
  // row 1: t0 V 0.6 old 0.5 G 0: V_clip = 0.6; both 0.36                                              -> 0.36, not clipped
  //        t1 V 0.0 old 0.5 G 1: V_clip = 0.3; (0-1)^2 = 1 > (0.3-1)^2 = 0.49                          -> 1,    not clipped
  // loss = 0.5 * (1.69 + 1.69 + 0.36 + 1) / 4 = 0.5925; clipped tokens 2 of 4
  const v = [
    [1.0, 2.0, 0.3],
    [0.6, 0.0, 9],
  ];
  const old = [
    [0.5, 2.5, 0],
    [0.5, 0.5, 0],
  ];
  const g = [
    [2, 1, 0.3],
    [0, 1, 0],
  ];
  const mask = [
    [1, 1, 0],
    [1, 1, 0],
  ];

  it('matches the hand-worked numbers and the pure reference', () => {
    const r = clippedValueLossTf(t2(v), t2(old), t2(g), t2(mask), 0.2, 4);
    expect(r.loss.dataSync()[0]).toBeCloseTo(0.5925, 6);
    expect(r.clipped.dataSync()[0]).toBe(2);
    const ref = clippedValueLoss(v, old, g, mask, 0.2);
    expect(r.loss.dataSync()[0]).toBeCloseTo(ref.vf_loss, 6);
    expect(ref.vf_clipfrac).toBe(0.5);
  });

  it('sums over micro-batches to the full-batch loss (each normalised by the whole batch)', () => {
    const full = clippedValueLossTf(t2(v), t2(old), t2(g), t2(mask), 0.2, 4).loss.dataSync()[0]!;
    const parts = [0, 1].map((b) => clippedValueLossTf(t2([v[b]!]), t2([old[b]!]), t2([g[b]!]), t2([mask[b]!]), 0.2, 4).loss.dataSync()[0]!);
    expect(parts[0]! + parts[1]!).toBeCloseTo(full, 6);
  });
});

describe('value head gradient', () => {
  // h [3, 4], w [4], b; old values and returns chosen so that no token sits on a clip edge or a
  // max tie (the loss is differentiable there): token 0 unclipped, token 1 clipped, token 2 masked.
  const h = [
    [0.3, -0.2, 0.5, 0.1],
    [-0.4, 0.6, 0.2, -0.3],
    [0.1, 0.1, -0.2, 0.4],
  ];
  const w0 = [0.2, -0.1, 0.4, 0.3];
  const b0 = 0.05;
  const old = [[0.2, -0.6, 0]];
  const ret = [[1.0, 0.8, 0.5]];
  const mask = [[1, 1, 0]];
  const eps = 0.2;

  /** The same loss in float64 through the pure reference (value-loss.ts). */
  const lossF64 = (w: number[], b: number) => {
    const vals = h.map((row) => row.reduce((s, x, k) => s + x * w[k]!, 0) + b);
    return clippedValueLoss([vals], old, ret, mask, eps).vf_loss;
  };

  it('matches central finite differences for w and b', () => {
    const w = tf.variable(tf.tensor2d(w0, [4, 1]));
    const b = tf.variable(tf.tensor1d([b0]));
    const { grads } = tf.variableGrads(() => {
      const v = tf.reshape(valueHead(tf.tensor2d(h), w as tf.Tensor2D, b as tf.Tensor1D), [1, 3]) as tf.Tensor2D;
      return clippedValueLossTf(v, t2(old), t2(ret), t2(mask), eps, 2).loss;
    }, [w, b]);
    const gw = Array.from(grads[w.name]!.dataSync());
    const gb = grads[b.name]!.dataSync()[0]!;
    const d = 1e-6;
    w0.forEach((_, k) => {
      const up = w0.map((x, j) => (j === k ? x + d : x));
      const dn = w0.map((x, j) => (j === k ? x - d : x));
      const fd = (lossF64(up, b0) - lossF64(dn, b0)) / (2 * d);
      expect(gw[k]).toBeCloseTo(fd, 4);
    });
    expect(gb).toBeCloseTo((lossF64(w0, b0 + d) - lossF64(w0, b0 - d)) / (2 * d), 4);
    // and the point is what the comment says: token 1 clipped, token 0 not
    const r = clippedValueLossTf(
      tf.reshape(valueHead(tf.tensor2d(h), w as tf.Tensor2D, b as tf.Tensor1D), [1, 3]) as tf.Tensor2D,
      t2(old),
      t2(ret),
      t2(mask),
      eps,
      2,
    );
    expect(r.clipped.dataSync()[0]).toBe(1);
    expect(gb).not.toBe(0);
  });
});

describe('per-token advantages in the policy loss', () => {
  it('a [B, T] tensor with each row constant equals the [B] advantages', () => {
    const logp = t2([
      [0, -1.2, -0.7],
      [0, -0.3, -2.0],
    ]);
    const oldLogp = t2([
      [0, -1.0, -0.9],
      [0, -0.5, -1.5],
    ]);
    const mask = t2([
      [0, 1, 1],
      [0, 1, 1],
    ]);
    const o = { lossType: 'dapo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
    const perSeq = grpoLoss({ logp, oldLogp, mask, advantages: tf.tensor1d([0.7, -1.3]) }, o).dataSync()[0]!;
    const perTok = grpoLoss(
      {
        logp,
        oldLogp,
        mask,
        advantages: t2([
          [0.7, 0.7, 0.7],
          [-1.3, -1.3, -1.3],
        ]),
      },
      o,
    ).dataSync()[0]!;
    expect(perTok).toBeCloseTo(perSeq, 6);
    // hand: rho = exp(-0.2), exp(0.2), exp(0.2), exp(-0.5); clip to [0.8, 1.2]
    //   A = 0.7:  min(0.8187*0.7, 0.8187*0.7) = 0.5731; min(1.2214*0.7, 1.2*0.7) = 0.84
    //   A = -1.3: min(1.2214*-1.3, 1.2*-1.3) = -1.5878; min(0.6065*-1.3, 0.8*-1.3) = -1.04
    //   loss = -(0.5731 + 0.84 - 1.5878 - 1.04) / 4 = 0.30368
    expect(perSeq).toBeCloseTo(0.30368, 4);
  });
});
