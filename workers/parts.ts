// The seams between the queues and the work they carry (interfaces in front of infrastructure): the rollout worker
// runs an episode, the group stage scores a group and updates user state, the trainer
// worker steps the LoRA. Two implementations sit behind these interfaces:
//   real      — rollout/, reward/, trainer/ (workers/real-parts.ts)
//   synthetic — a toy softmax policy served over real HTTP with a real GRPO step on it
//               (workers/synthetic/), for orchestration tests and the benchmark.
// `GSTEER_PARTS=synthetic` in the environment selects the synthetic parts; nothing falls
// back to them silently.
import type { RunConfig } from '../configs/schema.ts';
import type { Trajectory, TurnConstraint } from '../core/types.ts';
import type { RewardPart, RolloutContext as EnvRolloutContext, UserStatePart } from '../rollout/env/types.ts';
import type { Scored } from '../reward/types.ts';
import type { RolloutJob, TrainStats } from './payloads.ts';

export type { RewardPart, UserStatePart } from '../rollout/env/types.ts';
export type { Scored };

/** The rollout worker's context: the queue's job (a superset of the episode's fields). */
export interface RolloutContext extends EnvRolloutContext {
  job: RolloutJob;
}

/** An environment's rollout part (rollout/env/types.ts) run by the rollout worker. */
export interface RolloutPart {
  run(ctx: RolloutContext): Promise<Trajectory>;
  close(): Promise<void>;
}

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
  /** The adapter version that sampled the turn (method §5.7; its oldLogprobs are that version's). */
  policyVersion?: number;
}

export interface TrainerPart {
  /** Fresh LoRA (B = 0) or the given PEFT adapter as version 0. */
  init(initAdapter: string | null): Promise<void>;
  /** Restore adapter + optimizer state from a version dir the trainer wrote. */
  load(dir: string): Promise<void>;
  step(batch: TrainSequence[], step: number): Promise<TrainStats>;
  /** Write the PEFT adapter files and `optimizer.*` into dir (which exists and is empty). */
  save(dir: string): Promise<void>;
}

export interface Parts {
  kind: 'real' | 'synthetic';
  rollout(): Promise<RolloutPart>;
  reward(): Promise<RewardPart>;
  users(): Promise<UserStatePart>;
  trainer(): Promise<TrainerPart>;
}
