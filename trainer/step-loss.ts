// The loss of one micro-batch, for each kind of update (exhaustive over TrainBatch.kind).
import * as tf from '@tensorflow/tfjs';
import { grpoLoss, type GrpoLossOptions, type LossNormalizer } from './grpo/loss.ts';
import { grpoTokenSums, ZERO_SUMS, type GrpoTokenSums } from './grpo/stats.ts';
import { detach } from './grpo/detach.ts';
import { sftLoss } from './sft/loss.ts';
import type { Policy } from './policy.ts';
import { PAD_ID, padRows, type Rows } from './step-batch.ts';
import { assert } from '../util/errors.ts';
import type { TokenMasks } from '../model/token-masks.ts';
import type { TurnConstraint } from '../core/types.ts';

/**
 * A clipped policy-gradient update (the actor's: GRPO's per-trajectory advantages, or PPO's
 * per-token GAE ones, method §5 and §13), all per-token fields [B][T_b] aligned with inputIds.
 */
export interface PolicyBatch {
  kind: 'policy';
  inputIds: number[][];
  completionMask: number[][]; // 1 on policy-generated tokens
  advantages: number[]; // [B]
  /** Per-token advantages [B][T_b] aligned with inputIds (PPO's GAE, method §13); when set, `advantages` is not read. */
  tokenAdvantages?: number[][];
  /** [B] the trajectory each row (turn) belongs to; needed by grpo.lossAggregation = trajectory. */
  trajectories?: number[];
  /** logp under pi_old; omitted = the current policy, detached (on-policy, one update per batch). */
  oldLogprobs?: number[][];
  rolloutLogprobs?: number[][]; // inference-server logprobs (needed when tisCap is set)
  refLogprobs?: number[][]; // reference policy (needed when betaKl > 0)
  /** Constrained turns: the allowed sets each was sampled under (null = unconstrained), [B]. */
  masks?: readonly (TokenMasks | null)[];
  /** [B] the constraint each row's completion was sampled under (null = none): what a training engine replays into `masks` (method §5.13). */
  constraints?: readonly (TurnConstraint | null)[];
}

/** SFT update data (method §7): targetMask is 1 on the Plan + Action + Execute tokens. */
export interface SftBatch {
  kind: 'sft';
  inputIds: number[][];
  targetMask: number[][];
}

export interface MicroOptions {
  normalizer: LossNormalizer; // of the whole batch
  /** [B of the whole batch] loss tokens of each row's unit (trainer/grpo/loss-units.ts); GRPO only. */
  unitTokens?: readonly number[];
  recompute?: boolean;
  dropoutSeed?: number;
  withEntropy?: boolean;
  /**
   * Prefix-grouped training (method §5.11): each micro-batch is scored over its prefix tree,
   * shared prefixes computed once, and micro-batches are cut from the sequences in prefix
   * order so that those sharing the longest prefixes train together. Same loss and gradients.
   */
  prefixGrouping?: boolean;
  grpo?: Omit<GrpoLossOptions, 'normalizer'>; // the clipped loss (TRL's GRPO names); required for policy batches
}

export interface MicroResult {
  loss: tf.Scalar;
  sums: GrpoTokenSums;
}

/** The per-token rows that carry loss: completion tokens (GRPO) or targets (SFT). */
export function lossRows(batch: PolicyBatch | SftBatch): Rows {
  return batch.kind === 'policy' ? batch.completionMask : batch.targetMask;
}

const t2 = (rows: Rows, idx: readonly number[]) => tf.tensor2d(padRows(rows, idx, 0), undefined, 'float32');

export function microLoss(policy: Policy, batch: PolicyBatch | SftBatch, idx: number[], o: MicroOptions): MicroResult {
  const ids = o.prefixGrouping ? idx.map((b) => batch.inputIds[b]!) : padRows(batch.inputIds, idx, PAD_ID);
  const withEntropy = batch.kind === 'policy' && (o.withEntropy ?? false);
  const masks = batch.kind === 'policy' && batch.masks ? idx.map((b) => batch.masks![b] ?? null) : undefined;
  // Only loss tokens are read by the loss and its diagnostics (everything is masked by them).
  const scored = padRows(lossRows(batch), idx, 0);
  const { logprobs, entropy } = policy.score(
    ids,
    { training: true, dropoutSeed: o.dropoutSeed, recompute: o.recompute ?? false, withEntropy, scored, prefixTree: o.prefixGrouping ?? false },
    masks,
  );
  switch (batch.kind) {
    case 'sft':
      return { loss: sftLoss(logprobs, t2(batch.targetMask, idx), o.normalizer.tokens), sums: ZERO_SUMS };
    case 'policy': {
      assert(o.grpo, 'trainStep: a policy batch needs StepOptions.grpo');
      const x = {
        logp: logprobs,
        oldLogp: batch.oldLogprobs ? t2(batch.oldLogprobs, idx) : detach(logprobs),
        advantages: batch.tokenAdvantages ? t2(batch.tokenAdvantages, idx) : tf.tensor1d(idx.map((b) => batch.advantages[b]!)),
        mask: t2(batch.completionMask, idx),
        rolloutLogp: batch.rolloutLogprobs && t2(batch.rolloutLogprobs, idx),
        refLogp: batch.refLogprobs && t2(batch.refLogprobs, idx),
        unitTokens: o.unitTokens && tf.tensor1d(idx.map((b) => o.unitTokens![b]!)),
      };
      const opts = { ...o.grpo, normalizer: o.normalizer };
      return { loss: grpoLoss(x, opts), sums: grpoTokenSums(x, opts, entropy) };
    }
    default: {
      const never: never = batch;
      throw new Error(`internal: unknown batch kind ${String((never as { kind: string }).kind)}`);
    }
  }
}
