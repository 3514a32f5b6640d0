// The trainer step as it was before issue 17, kept outside trainer/ as the baseline of
// bench/trainer/lora.ts and the reference of tests/trainer/step-scored.test.ts: lm_head and
// log-softmax over every position (not only the loss tokens) and a backward through every
// row, zero-advantage rows included. Only those two choices differ; the loss, micro-batching
// and gradient accumulation are trainer/step.ts's own.
import type { Policy } from '../../trainer/policy.ts';
import { accumulateGradients, type Accumulated, type RowSplit, type StepOptions, type TrainBatch } from '../../trainer/step.ts';

/** `policy` scoring every position: the `scored` hint (loss tokens only) is dropped. */
export function scoreAllPositions(policy: Policy): Policy {
  return {
    variables: () => policy.variables(),
    score: (inputIds, opts, masks) => policy.score(inputIds, { ...opts, scored: undefined }, masks),
  };
}

/** Every row of the micro-batch gets a backward. */
export const everyRow: RowSplit = (_batch, idx) => ({ active: idx, idle: [] });

/** accumulateGradients on the pre-issue-17 path (same result, more work). */
export function fullPathGradients(policy: Policy, batch: TrainBatch, o: Omit<StepOptions, 'lr' | 'maxGradNorm'>): Accumulated {
  return accumulateGradients(scoreAllPositions(policy), batch, o, everyRow);
}
