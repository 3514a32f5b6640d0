// What the trainer worker (workers/trainer-worker.ts) asks of a trainer, whatever computes the
// update: one TrainSequence per policy turn in, step statistics out, and adapter versions saved
// and restored whole (method §10). Implementations: the in-process step (step-part.ts), PPO's
// actor + critic (ppo-part.ts), the Tinker contract (contract-part.ts), and the orchestration
// tests' toy (workers/synthetic/).
import type { TurnConstraint } from '../../core/types.ts';

/** One policy-token sequence for the trainer (method §5: only policy tokens carry loss). */
export interface TrainSequence {
  promptIds: number[];
  completionIds: number[];
  oldLogprobs: number[]; // server logprobs at sampling time
  advantage: number; // A_i of the trajectory, shared by all of its turns (GRPO; 0 under PPO)
  /** Index of its trajectory in the update (group * G + i; its turns come in order): the loss unit of
   *  grpo.lossAggregation = trajectory, and PPO's per-trajectory GAE (method §13). */
  trajectory: number;
  /** PPO (method §13): the trajectory's reward. */
  reward?: number;
  /** The constraint the turn was sampled under (rollout.constrained); the trainer replays its masks. */
  constraint?: TurnConstraint;
  /** The adapter version that sampled the turn (method §5.7; its oldLogprobs are that version's; the stale-adapter check, sampler-check.ts). */
  policyVersion?: number;
}

/** Step statistics (TRL names); workers/payloads.ts TrainStatsSchema checks them at the queue. */
export interface UpdateStats {
  loss: number;
  clip_ratio: number;
  grad_norm: number;
  entropy: number;
  num_tokens: number;
  train_seconds: number;
  diagnostics?: Record<string, number>;
}

export interface TrainerPart {
  /** Fresh LoRA (B = 0) or the given PEFT adapter as version 0. */
  init(initAdapter: string | null): Promise<void>;
  /** Restore adapter + optimizer state from a version dir the trainer wrote. */
  load(dir: string): Promise<void>;
  step(batch: TrainSequence[], step: number): Promise<UpdateStats>;
  /** Write the PEFT adapter files and `optimizer.*` into dir (which exists and is empty). */
  save(dir: string): Promise<void>;
  close?(): Promise<void>;
}
