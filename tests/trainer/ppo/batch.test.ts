// PPO targets over an update's turns (trainer/ppo/batch.ts), worked by hand.
import { describe, expect, it } from 'vitest';
import { ppoTargets } from '../../../trainer/ppo/batch.ts';

// trajectory 0: two turns, seq 0 (prompt 2, completion 2) and seq 1 (prompt 3, completion 1), score 1
// trajectory 1: one turn, seq 2 (prompt 1, completion 2), score -0.5
const seqs = [
  { promptLength: 2, length: 4, trajectory: 0 },
  { promptLength: 3, length: 4, trajectory: 0 },
  { promptLength: 1, length: 3, trajectory: 1 },
];
const logp = [
  [0, 0, -1, -2],
  [0, 0, 0, -0.5],
  [0, -1, -1],
];
const ref = [
  [0, 0, -1.5, -2],
  [0, 0, 0, -1.0],
  [0, -1, -3],
];
const values = [
  [9, 9, 0.2, 0.4],
  [9, 9, 9, 0.6],
  [9, 0.1, -0.2],
]; // prompt positions are never read
const scores = [1, -0.5];

describe('ppoTargets', () => {
  it('gamma = lambda = 1: returns are the reward-to-go over the trajectory, KL k1 in every token', () => {
    // traj 0 response tokens: k1 = 0.5, 0, 0.5; r = -0.5*k1 + [last]*1 = -0.25, 0, 0.75
    //   G = 0.5, 0.75, 0.75; A = G - V = 0.3, 0.35, 0.15
    // traj 1: k1 = 0, 2; r = 0, -1 - 0.5 = -1.5; G = -1.5, -1.5; A = -1.6, -1.3
    const t = ppoTargets(seqs, logp, ref, values, scores, { gamma: 1, lambda: 1, whiten: false, klCoef: 0.5, klEstimator: 'k1' });
    const close = (got: number[][], want: number[][]) => got.forEach((row, b) => row.forEach((x, i) => expect(x).toBeCloseTo(want[b]![i]!, 12)));
    close(t.advantages, [
      [0, 0, 0.3, 0.35],
      [0, 0, 0, 0.15],
      [0, -1.6, -1.3],
    ]);
    close(t.returns, [
      [0, 0, 0.5, 0.75],
      [0, 0, 0, 0.75],
      [0, -1.5, -1.5],
    ]);
    // per-trajectory masked mean of kl: 1/3 and 1 -> 2/3
    expect(t.metrics.kl_in_reward).toBeCloseTo(2 / 3, 12);
    expect(t.metrics.returns_mean).toBeCloseTo((0.5 + 0.75 + 0.75 - 1.5 - 1.5) / 5, 12);
  });

  it('lambda = 0.5 carries the running advantage across the turn boundary', () => {
    // traj 0 alone: r = -0.25, 0, 0.75; V = 0.2, 0.4, 0.6
    //   delta = -0.25 + 0.4 - 0.2 = -0.05, 0 + 0.6 - 0.4 = 0.2, 0.75 - 0.6 = 0.15
    //   A2 = 0.15; A1 = 0.2 + 0.5*0.15 = 0.275; A0 = -0.05 + 0.5*0.275 = 0.0875; G = A + V
    const t = ppoTargets(seqs.slice(0, 2), logp.slice(0, 2), ref.slice(0, 2), values.slice(0, 2), [1], {
      gamma: 1,
      lambda: 0.5,
      whiten: false,
      klCoef: 0.5,
      klEstimator: 'k1',
    });
    expect(t.advantages[0]![2]).toBeCloseTo(0.0875, 12);
    expect(t.advantages[0]![3]).toBeCloseTo(0.275, 12);
    expect(t.advantages[1]![3]).toBeCloseTo(0.15, 12);
    expect(t.returns[0]![2]).toBeCloseTo(0.2875, 12);
    expect(t.returns[0]![3]).toBeCloseTo(0.675, 12);
    expect(t.returns[1]![3]).toBeCloseTo(0.75, 12);
  });

  it('whitening centres the advantages over the batch; the returns stay raw', () => {
    const t = ppoTargets(seqs, logp, ref, values, scores, { gamma: 1, lambda: 1, whiten: true, klCoef: 0.5, klEstimator: 'k1' });
    const a = [t.advantages[0]![2]!, t.advantages[0]![3]!, t.advantages[1]![3]!, t.advantages[2]![1]!, t.advantages[2]![2]!];
    expect(a.reduce((s, x) => s + x, 0)).toBeCloseTo(0, 9);
    expect(t.returns[2]![1]).toBeCloseTo(-1.5, 12);
  });
});
