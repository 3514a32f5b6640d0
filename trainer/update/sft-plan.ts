// SFT (method §7.8) as a Tinker call (method §5.13): the loss is minus the mean logprob of the
// batch's target tokens, so `cross_entropy` (a sum of -logp * weights) with weights = mask / tokens
// (the whole batch's target count) is the same loss and the same gradient.
import type { SftBatch } from '../step-loss.ts';
import { rowDatum } from './datums.ts';
import type { PlannedCall } from './policy-plan.ts';

export function sftCall(batch: SftBatch): { call: PlannedCall; weights: number[][]; tokens: number } {
  const tokens = batch.targetMask.reduce((s, r) => s + r.reduce((a, x) => a + x, 0), 0);
  const weights = batch.targetMask.map((r) => r.map((m) => m / Math.max(tokens, 1)));
  const data = batch.inputIds.map((ids, b) => rowDatum({ ids, inputs: { weights: weights[b]! }, scored: batch.targetMask[b]! }));
  return { call: { lossFn: 'cross_entropy', data }, weights, tokens };
}
