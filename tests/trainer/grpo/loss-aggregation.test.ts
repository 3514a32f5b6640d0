import { describe, it, expect } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { accumulateGradients, type PolicyBatch } from '../../../trainer/step.ts';
import type { Policy } from '../../../trainer/policy.ts';
import type { LossAggregation, LossType } from '../../../trainer/grpo/loss.ts';
import { lossUnits } from '../../../trainer/grpo/loss-units.ts';

await tf.setBackend('cpu');

// Hand example (method §5.5): three turns, the first two of trajectory 0 (A = 1), the third
// of trajectory 1 (A = -0.5); T = 4, column 0 is the prompt. A policy whose logprobs are a
// variable theta [3, 4] (row b read from inputIds[b][0] = b), so d loss / d theta is the
// per-token weight itself. eps = 0.2.
//   loss tokens: row 0 columns 2,3 (2 tokens); row 1 column 2 (1); row 2 columns 1,2 (2)
//   rho (theta - old): row 0 [1.1, 0.9], row 1 [1.5], row 2 [0.5, 1.0]
//   L_t = -min(rho A, clip(rho, 0.8, 1.2) A):
//     row 0: -1.1, -0.9   (sum -2.0)
//     row 1: -1.2         (clipped high; sum -1.2)
//     row 2: min(-0.25, -0.4) = -0.4 -> 0.4;  -0.5 -> 0.5   (sum 0.9)
//   grpo, turn:        mean(-2.0/2, -1.2/1, 0.9/2)      = (-1.0 - 1.2 + 0.45) / 3 = -0.583333
//   grpo, trajectory:  mean((-2.0 - 1.2)/3, 0.9/2)      = (-1.066667 + 0.45) / 2  = -0.308333
//   dapo, both:        (-2.0 - 1.2 + 0.9) / 5           = -0.46
//   dr_grpo (L = 4):   turn -2.3 / (3 * 4) = -0.191667;  trajectory -2.3 / (2 * 4) = -0.2875
// On-policy (old = theta detached, rho = 1): d L / d theta_bt = -A_b / (unitTokens_b * units)
//   grpo, turn:        unitTokens [2, 1, 2], units 3 -> row 0 -1/6, row 1 -1/3, row 2 +0.5/6
//   grpo, trajectory:  unitTokens [3, 3, 2], units 2 -> row 0 -1/6, row 1 -1/6, row 2 +0.5/4
const mask = [
  [0, 0, 1, 1],
  [0, 0, 1, 0],
  [0, 1, 1, 0],
];
const rho = [
  [1, 1, 1.1, 0.9],
  [1, 1, 1.5, 1],
  [1, 0.5, 1.0, 1],
];
const A = [1, 1, -0.5];
const trajectories = [0, 0, 1];
const theta0 = [
  [0, -1, -2, -1.5],
  [0, -0.7, -1.2, -3],
  [0, -2, -0.4, -1],
];

function thetaPolicy(): Policy & { theta: tf.Variable } {
  const theta = tf.variable(tf.tensor2d(theta0));
  return {
    theta,
    variables: () => [theta],
    score: (ids) => ({
      logprobs: tf.gather(
        theta,
        tf.tensor1d(
          ids.map((r) => r[0]!),
          'int32',
        ),
      ) as tf.Tensor2D,
    }),
  };
}

const batch = (offPolicy: boolean): PolicyBatch => ({
  kind: 'policy',
  inputIds: [0, 1, 2].map((b) => [b, 5, 6, 7]),
  completionMask: mask,
  advantages: A,
  trajectories,
  ...(offPolicy ? { oldLogprobs: theta0.map((r, b) => r.map((x, t) => x - Math.log(rho[b]![t]!))) } : {}),
});

const run = (lossType: LossType, aggregation: LossAggregation, microBatchSize: number, offPolicy: boolean) => {
  const policy = thetaPolicy();
  const acc = accumulateGradients(policy, batch(offPolicy), {
    microBatchSize,
    grpo: { lossType, aggregation, epsilon: 0.2, betaKl: 0, tisCap: null, maxCompletionLength: 4 },
  });
  const grad = acc.grads[0]!.arraySync() as number[][];
  tf.dispose([...acc.grads, policy.theta]);
  return { loss: acc.loss, grad };
};

describe('grpo.lossAggregation on the hand example', () => {
  const cases: [LossType, LossAggregation, number][] = [
    ['grpo', 'turn', -0.583333],
    ['grpo', 'trajectory', -0.308333],
    ['dapo', 'turn', -0.46],
    ['dapo', 'trajectory', -0.46],
    ['dr_grpo', 'turn', -0.191667],
    ['dr_grpo', 'trajectory', -0.2875],
  ];
  for (const [lossType, aggregation, want] of cases)
    it(`${lossType} / ${aggregation}: loss ${want}, also when micro-batches split a trajectory`, () => {
      expect(run(lossType, aggregation, 3, true).loss).toBeCloseTo(want, 5);
      expect(run(lossType, aggregation, 1, true).loss).toBeCloseTo(want, 5);
    });

  const grads: [LossAggregation, number[]][] = [
    ['turn', [-1 / 6, -1 / 3, 0.5 / 6]],
    ['trajectory', [-1 / 6, -1 / 6, 0.5 / 4]],
  ];
  for (const [aggregation, perRow] of grads)
    it(`grpo / ${aggregation}: the gradient of each loss token is -A / (unit tokens x units)`, () => {
      for (const mbs of [1, 2, 3]) {
        const { grad } = run('grpo', aggregation, mbs, false);
        grad.forEach((row, b) => row.forEach((g, t) => expect(g).toBeCloseTo(mask[b]![t] ? perRow[b]! : 0, 6)));
      }
    });

  it('a 3-turn and a 1-turn trajectory weigh the same under trajectory, 3:1 under turn', () => {
    // 3 rows of trajectory 0 with 1 token each, 1 row of trajectory 1 with 1 token
    expect(lossUnits([1, 1, 1, 1], 'trajectory', [0, 0, 0, 1])).toEqual({ units: 2, unitTokens: [3, 3, 3, 1] });
    expect(lossUnits([1, 1, 1, 1], 'turn')).toEqual({ units: 4, unitTokens: [1, 1, 1, 1] });
  });

  it('trajectory without trajectory ids is a clear error', () => {
    const policy = thetaPolicy();
    const { trajectories: _, ...bare } = batch(false);
    expect(() =>
      accumulateGradients(policy, bare, { microBatchSize: 3, grpo: { lossType: 'grpo', aggregation: 'trajectory', epsilon: 0.2, betaKl: 0, tisCap: null } }),
    ).toThrow(/lossAggregation is "trajectory".*set grpo.lossAggregation=turn/);
    policy.theta.dispose();
  });
});
