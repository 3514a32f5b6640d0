import { describe, it, expect } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { clipGradNorm, globalNorm } from '../../../trainer/optim/clip.ts';
import { lrAt } from '../../../trainer/optim/schedule.ts';

await tf.setBackend('cpu');

describe('clipGradNorm', () => {
  it('returns the pre-clip global norm and scales by maxNorm / (norm + 1e-6)', () => {
    // ||(3, 4)||^2 + ||(12)||^2 = 9 + 16 + 144 = 169 -> norm 13
    const g = [tf.tensor1d([3, 4]), tf.tensor1d([12])];
    const { grads, norm } = clipGradNorm(g, 1);
    expect(norm).toBeCloseTo(13, 5);
    const c = 1 / (13 + 1e-6);
    expect(Array.from(grads[0]!.dataSync())).toEqual([Math.fround(3 * c), Math.fround(4 * c)].map((x) => expect.closeTo(x, 6)));
    expect(globalNorm(grads)).toBeCloseTo(1, 5);
  });

  it('leaves small gradients unchanged', () => {
    const { grads, norm } = clipGradNorm([tf.tensor1d([0.3, 0.4])], 1);
    expect(norm).toBeCloseTo(0.5, 6);
    expect(Array.from(grads[0]!.dataSync())).toEqual([Math.fround(0.3), Math.fround(0.4)]);
  });
});

describe('lrAt', () => {
  const base = { baseLr: 1e-3, warmupSteps: 0, totalSteps: 10 };
  it('constant', () => {
    expect(lrAt(0, { ...base, kind: 'constant' })).toBe(1e-3);
    expect(lrAt(7, { ...base, kind: 'constant' })).toBe(1e-3);
  });
  it('linear warmup then cosine to 0 (HF get_cosine_schedule_with_warmup)', () => {
    const o = { ...base, kind: 'cosine' as const, warmupSteps: 2 };
    expect(lrAt(0, o)).toBe(0);
    expect(lrAt(1, o)).toBeCloseTo(5e-4, 12);
    expect(lrAt(2, o)).toBeCloseTo(1e-3, 12); // progress 0
    expect(lrAt(6, o)).toBeCloseTo(5e-4, 12); // progress 4/8 = 0.5 -> 0.5 * (1 + cos(pi/2))
    expect(lrAt(10, o)).toBeCloseTo(0, 12);
  });
  it('refuses a cosine run shorter than its warmup', () => {
    expect(() => lrAt(0, { ...base, kind: 'cosine', warmupSteps: 10 })).toThrow(/must exceed grpo.warmupSteps/);
  });
});
