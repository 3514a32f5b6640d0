// The training engine's seam (issue 31): what one Tinker-API training call does to a LoRA model,
// in process, with no HTTP. gsteer's trainer service (trainer/service/) decodes the wire format
// into these records and calls a TrainingEngine; tests call one directly to compare gradients
// with the in-process GRPO/SFT step (trainer/step.ts). Names follow the Tinker API
// (forward_backward, optim_step, loss_fn_inputs, AdamParams); see method §5 and
// tinker-docs.thinkingmachines.ai/losses for the built-in losses' definitions.
import type { TurnConstraint } from '../../core/types.ts';

/** Tinker's built-in losses (LossFnType of the 0.25 SDK). */
export type TinkerLossFn = 'cross_entropy' | 'importance_sampling' | 'ppo' | 'cispo' | 'dro';

/**
 * One Datum, decoded. Tinker alignment: position i of `tokens` (model_input) predicts
 * `inputs.target_tokens[i]`; every loss input is [N] with N = tokens.length.
 */
export interface EngineDatum {
  tokens: number[]; // [N] model_input as token ids
  inputs: {
    target_tokens: number[]; // [N] int
    weights?: number[]; // [N] cross_entropy
    logprobs?: number[]; // [N] sampling logprobs (importance_sampling, ppo, cispo, dro)
    advantages?: number[]; // [N]
    [key: string]: number[] | undefined;
  };
  /**
   * gsteer extension (a plain Tinker engine never sees it): the grammar the completion was
   * sampled under, so the engine scores target positions under the same token masks (method §5.6).
   * `start` = index in `tokens` of the first position whose target was sampled under it.
   */
  constraint?: TurnConstraint & { start: number };
  /**
   * gsteer extension: [N] 1 where the target logprob is wanted (e.g. a turn's completion), 0
   * where not (its prompt): at a 151,936-id vocabulary the head dominates (issue 17). Positions
   * with a nonzero loss input are always scored (dro: every position). The outputs then carry
   * `scored` [N] and `logprobs` is 0 where it is 0. Absent = every position, as Tinker.
   */
  scored?: number[];
}

export interface ForwardBackwardOptions {
  lossFn: TinkerLossFn;
  /** loss_fn_config, e.g. ppo's clip_low_threshold / clip_high_threshold. */
  config?: Record<string, number>;
  /** forward only: no gradient is accumulated (Tinker `forward`). */
  forwardOnly: boolean;
  /** gsteer's extensions (a plain Tinker client never sends them; a remote engine never reads them). */
  gsteer?: GsteerCallOptions;
}

/**
 * gsteer's per-call extensions (method §5.11, §5.6, §5.7). Each is optional; absent, the call
 * is exactly Tinker's.
 */
export interface GsteerCallOptions {
  /** Micro-batches cut in prefix order and scored over their prefix tree (method §5.11): same loss and gradients. */
  prefixGrouping?: boolean;
  /**
   * LoRA dropout seed of the call's first micro-batch (micro-batch k: seed + k), as the in-process
   * step seeds it; absent = no dropout (Tinker trains without LoRA dropout).
   */
  dropoutSeed?: number;
  /** Also return `entropy` [N] of each position's (masked) distribution. */
  withEntropy?: boolean;
  /** forward only: score under the base model without the adapter (the reference policy of the k3 KL term). */
  reference?: boolean;
}

export interface ForwardBackwardResult {
  /** Per datum, as Tinker's loss_fn_outputs: at least `logprobs` [N] (of target_tokens) and `elementwise_loss` [N]. */
  outputs: Record<string, number[]>[];
  /** Tinker metrics, e.g. `loss:sum`; gsteer adds diagnostics under its own names. */
  metrics: Record<string, number>;
}

/** Tinker AdamParams (defaults of the 0.25 SDK: lr 1e-4, betas 0.9 / 0.95, eps 1e-12, wd 0, clip 0 = off). */
export interface AdamParams {
  learning_rate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weight_decay: number;
  grad_clip_norm: number;
}

/** One LoRA model inside an engine: gradients accumulate over forward_backward calls until optim_step. */
export interface TrainingEngine {
  forwardBackward(data: readonly EngineDatum[], o: ForwardBackwardOptions): Promise<ForwardBackwardResult>;
  /** Apply the accumulated gradients (then clear them); returns metrics such as grad_norm (before clipping). */
  optimStep(adam: AdamParams): Promise<{ metrics: Record<string, number> }>;
  /** Write the PEFT adapter (+ optimizer state when asked) into an existing empty folder. */
  save(dir: string, o: { optimizer: boolean }): Promise<void>;
  /** Restore the adapter (+ optimizer state when asked) from a folder `save` wrote or a PEFT adapter. */
  load(dir: string, o: { optimizer: boolean }): Promise<void>;
  dispose(): void;
}
