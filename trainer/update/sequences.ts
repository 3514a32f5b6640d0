// An update's policy turns as the train step's batch (method §5): one row per policy turn,
// prompt (context, no loss) + completion (loss), the advantage of its trajectory; constrained
// turns carry the constraint they were sampled under and, for the in-process step, its masks.
import type { TokenMasks } from '../../model/token-masks.ts';
import type { PolicyBatch } from '../step-loss.ts';
import type { TrainSequence } from './part.ts';

export function policyRows(seqs: readonly TrainSequence[], offPolicy: boolean, masks: readonly (TokenMasks | null)[]): PolicyBatch {
  const inputIds = seqs.map((s) => [...s.promptIds, ...s.completionIds]);
  const completionMask = seqs.map((s) => [...s.promptIds.map(() => 0), ...s.completionIds.map(() => 1)]);
  const rolloutLogprobs = seqs.map((s) => [...s.promptIds.map(() => 0), ...s.oldLogprobs]);
  const constrained = seqs.some((s) => s.constraint);
  return {
    kind: 'policy',
    inputIds,
    completionMask,
    advantages: seqs.map((s) => s.advantage),
    trajectories: seqs.map((s) => s.trajectory),
    rolloutLogprobs,
    // With policy lag the sampling policy is an older adapter: its (server) logprobs are pi_old.
    // On-policy, pi_old is the current policy detached (trainer/step-loss.ts).
    ...(offPolicy ? { oldLogprobs: rolloutLogprobs } : {}),
    // masks may still be arriving (structured/replay-pool.ts): decide by the turns, not by reading them
    ...(constrained ? { masks, constraints: seqs.map((s) => s.constraint ?? null) } : {}),
  };
}
