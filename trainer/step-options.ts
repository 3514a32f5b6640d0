// From the run config to the train step's options (method §5), in one place, so the trainer
// worker and tests read the same mapping. No tfjs: the contract's client side reads it too.
import type { RunConfig } from '../configs/schema.ts';
import type { GrpoLossOptions } from './grpo/loss.ts';
import type { AdamWOptions } from './optim/adamw.ts';
import { lrAt } from './optim/schedule.ts';
import type { StepOptions } from './step.ts';

/**
 * Loss options. Dr. GRPO's constant is TRL's max_completion_length; a multi-turn episode's
 * policy tokens are bounded by maxTurns x maxTokens, so that is our constant.
 */
export function grpoLossOptions(cfg: RunConfig): Omit<GrpoLossOptions, 'normalizer'> {
  const g = cfg.grpo;
  return {
    lossType: g.lossType,
    aggregation: g.lossAggregation,
    epsilon: g.epsilon,
    epsilonHigh: g.epsilonHigh,
    betaKl: g.betaKl,
    tisCap: g.tisCap,
    maxCompletionLength: cfg.rollout.maxTurns * cfg.rollout.maxTokens,
  };
}

/** Options of GRPO update `step` (0-based); dropout seeded per update so a resume replays it. */
export function grpoStepOptions(cfg: RunConfig, step: number, totalSteps: number): StepOptions {
  const g = cfg.grpo;
  return {
    lr: lrAt(step, { kind: g.lrSchedule, baseLr: g.learningRate, warmupSteps: g.warmupSteps, totalSteps }),
    microBatchSize: g.microBatchSize,
    maxGradNorm: g.maxGradNorm,
    recompute: g.gradientCheckpointing,
    prefixGrouping: g.prefixGrouping,
    dropoutSeed: (cfg.seed * 1_000_003 + step * 7919) >>> 0,
    withEntropy: true,
    grpo: grpoLossOptions(cfg),
  };
}

/** The AdamW of the run's updates: the config's betas, eps and weight decay (pure: no tfjs here). */
export function grpoAdam(cfg: RunConfig): AdamWOptions {
  const g = cfg.grpo;
  return { beta1: g.adamBeta1, beta2: g.adamBeta2, eps: g.adamEps, weightDecay: g.weightDecay };
}
