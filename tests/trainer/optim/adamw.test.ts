import { describe, it, expect } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { AdamW, type AdamWOptions } from '../../../trainer/optim/adamw.ts';

await tf.setBackend('cpu');

const opts: AdamWOptions = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };

/** Independent reference: torch.optim.AdamW's update written out in double precision. */
function referenceAdamW(p0: number[], grads: number[][], lrs: number[], o: AdamWOptions): number[] {
  const p = [...p0];
  const m = p.map(() => 0);
  const v = p.map(() => 0);
  grads.forEach((g, s) => {
    const k = s + 1;
    const lr = lrs[s]!;
    for (let i = 0; i < p.length; i++) {
      p[i] = p[i]! * (1 - lr * o.weightDecay);
      m[i] = o.beta1 * m[i]! + (1 - o.beta1) * g[i]!;
      v[i] = o.beta2 * v[i]! + (1 - o.beta2) * g[i]! * g[i]!;
      const denom = Math.sqrt(v[i]!) / Math.sqrt(1 - o.beta2 ** k) + o.eps;
      p[i] = p[i]! - (lr / (1 - o.beta1 ** k)) * (m[i]! / denom);
    }
  });
  return p;
}

const p0 = [0.5, -1.25, 2.0, 0.0];
const grads = [
  [0.1, -0.2, 0.3, 0.0],
  [-0.05, 0.4, 0.0, 1e-3],
  [0.2, 0.2, -0.7, -2.0],
];
const lrs = [1e-2, 5e-3, 1e-2];

describe('AdamW', () => {
  it('matches an independent double-precision torch.optim.AdamW update over 3 steps', () => {
    const p = tf.variable(tf.tensor1d(p0));
    const opt = new AdamW([p], opts);
    grads.forEach((g, s) => tf.tidy(() => opt.step([tf.tensor1d(g)], lrs[s]!)));
    const ref = referenceAdamW(p0, grads, lrs, opts);
    const got = Array.from(p.dataSync());
    got.forEach((x, i) => expect(x).toBeCloseTo(ref[i]!, 6));
    // Sanity of the reference itself, step 1 by hand for p[0]: m = 0.01, v = 1e-5,
    // m_hat = 0.1, v_hat = 0.01 -> update = lr * 0.1 / (0.1 + 1e-8) ~= 1e-2, decay 0.5 * 1e-4.
    expect(referenceAdamW([0.5], [[0.1]], [1e-2], opts)[0]).toBeCloseTo(0.5 - 0.5e-4 - 1e-2, 8);
    expect(opt.stepCount).toBe(3);
  });

  it('3 steps == 2 steps + save/load into a fresh optimizer + 1 step, bitwise', () => {
    const run = (n: number, params: tf.Variable, opt: AdamW, from = 0) => {
      for (let s = from; s < from + n; s++) tf.tidy(() => opt.step([tf.tensor1d(grads[s]!)], lrs[s]!));
    };
    const pa = tf.variable(tf.tensor1d(p0));
    const a = new AdamW([pa], opts);
    run(3, pa, a);

    const pb = tf.variable(tf.tensor1d(p0));
    const b = new AdamW([pb], opts);
    run(2, pb, b);
    const saved = b.state();
    const savedParams = Float32Array.from(pb.dataSync() as Float32Array);
    // through JSON and back, as a checkpoint would
    const json = JSON.parse(JSON.stringify({ ...saved, m: saved.m.map((x) => Array.from(x)), v: saved.v.map((x) => Array.from(x)) }));
    const pc = tf.variable(tf.tensor1d(savedParams));
    const c = new AdamW([pc], opts);
    c.load({ ...json, m: json.m.map((x: number[]) => Float32Array.from(x)), v: json.v.map((x: number[]) => Float32Array.from(x)) });
    run(1, pc, c, 2);
    expect(Array.from(pc.dataSync())).toEqual(Array.from(pa.dataSync()));
    expect(c.state().m).toEqual(a.state().m);
    expect(c.stepCount).toBe(3);
  });

  it('refuses a state whose shapes do not match the variables', () => {
    const p = tf.variable(tf.zeros([2, 3]));
    const opt = new AdamW([p], opts);
    const bad = { step: 1, names: ['x'], shapes: [[3, 2]], m: [new Float32Array(6)], v: [new Float32Array(6)] };
    expect(() => opt.load(bad)).toThrow(/shape \[3x2\] but the variable has \[2x3\]/);
  });

  it('does not leak tensors per step', () => {
    const p = tf.variable(tf.tensor1d(p0));
    const opt = new AdamW([p], opts);
    const g = tf.tensor1d(grads[0]!);
    opt.step([g], 1e-2);
    const before = tf.memory().numTensors;
    opt.step([g], 1e-2);
    opt.load(opt.state());
    expect(tf.memory().numTensors).toBe(before);
  });
});
