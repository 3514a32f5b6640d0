// Per-token rewards with the KL penalty in the reward (trainer/ppo/kl-reward.ts), worked by hand.
import { describe, expect, it } from 'vitest';
import { klPenalty, tokenLevelRewards } from '../../../trainer/ppo/kl-reward.ts';

describe('KL estimators', () => {
  it('k1 = logp - ref', () => {
    expect(klPenalty(-1, -1.5, 'k1')).toBe(0.5);
    expect(klPenalty(-2, -1, 'k1')).toBe(-1);
  });

  it('k3 = exp(logr) - logr - 1 with logr = ref - logp', () => {
    // logr = -0.5: exp(-0.5) = 0.6065306597, + 0.5 - 1 = 0.1065306597
    expect(klPenalty(-1, -1.5, 'k3')).toBeCloseTo(Math.exp(-0.5) - 0.5, 12);
    expect(klPenalty(-1, -1.5, 'k3')).toBeCloseTo(0.1065306597, 10);
    // logr = 1: e - 1 - 1 = 0.7182818285
    expect(klPenalty(-2, -1, 'k3')).toBeCloseTo(0.7182818285, 10);
    expect(klPenalty(-1, -1, 'k3')).toBe(0); // same policy: exp(0) - 0 - 1
  });

  it("k3 keeps verl's guards: logr clamped to [-20, 20], the estimate to [-10, 10]", () => {
    // logr = -30 -> -20: exp(-20) + 20 - 1 = 19.000000002 -> 10
    expect(klPenalty(0, -30, 'k3')).toBe(10);
  });
});

describe('tokenLevelRewards', () => {
  // Two sequences, beta = 0.1, k1:
  //   row 0: logp [-1, -2, 0], ref [-1.5, -1, 0], mask [1, 1, 0] -> kl [0.5, -1, 0(masked)]
  //          rewards [-0.05, +0.1 + score 1.0 on the last generated token (t=1), 0]
  //   row 1: logp [-0.5, -0.5, -0.5], ref [-0.5, -1.0, -0.2], mask [1, 1, 1] -> kl [0, 0.5, -0.3]
  //          rewards [0, -0.05, 0.03 + score 0.5]
  //   klMean: mean of per-sequence masked means = ((0.5 - 1) / 2 + (0 + 0.5 - 0.3) / 3) / 2
  //         = (-0.25 + 0.0666667) / 2 = -0.0916667
  const logp = [
    [-1, -2, 0],
    [-0.5, -0.5, -0.5],
  ];
  const ref = [
    [-1.5, -1, 0],
    [-0.5, -1.0, -0.2],
  ];
  const mask = [
    [1, 1, 0],
    [1, 1, 1],
  ];

  it('folds -beta * kl into every generated token and the score into the last one', () => {
    const t = tokenLevelRewards([1.0, 0.5], logp, ref, mask, 0.1, 'k1');
    [-0.05, 1.1, 0].forEach((x, i) => expect(t.rewards[0]![i]).toBeCloseTo(x, 12));
    [0, -0.05, 0.53].forEach((x, i) => expect(t.rewards[1]![i]).toBeCloseTo(x, 12));
    expect(t.kl[0]).toEqual([0.5, -1, 0]);
    expect(t.klMean).toBeCloseTo(-0.0916667, 6);
    expect(t.klCoef).toBe(0.1);
  });

  it('with beta = 0 the rewards are the scores on the last generated token only', () => {
    const t = tokenLevelRewards([1.0, 0.5], logp, ref, mask, 0, 'k3');
    expect(t.rewards.map((r) => r.map((x) => x + 0))).toEqual([
      [0, 1, 0],
      [0, 0, 0.5],
    ]);
  });

  it('refuses a response without generated tokens and a score count that does not match', () => {
    expect(() => tokenLevelRewards([1], [[0, 0]], [[0, 0]], [[0, 0]], 0.1, 'k1')).toThrow(/no generated token/);
    expect(() => tokenLevelRewards([1, 2], [[0]], [[0]], [[1]], 0.1, 'k1')).toThrow(/2 scores for 1/);
  });
});
