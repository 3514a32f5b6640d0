// The seams between the queues and the work they carry (STYLE.md §8): the rollout worker
// runs an episode, the group stage scores a group and updates user state, the trainer
// worker steps the LoRA. Two implementations sit behind these interfaces:
//   real      — rollout/, reward/, trainer/ (workers/real-parts.ts)
//   synthetic — a toy softmax policy served over real HTTP with a real GRPO step on it
//               (workers/synthetic/), for orchestration tests and the benchmark.
// `GSTEER_PARTS=synthetic` in the environment selects the synthetic parts; nothing falls
// back to them silently.
import type { RunConfig } from '../configs/schema.ts';
import type { Instance, UserState } from '../data/schema.ts';
import type { Trajectory, TurnConstraint } from '../core/types.ts';
import type { Scored } from '../reward/types.ts';
import type { RolloutJob, TrainStats } from './payloads.ts';

export interface RolloutContext {
  job: RolloutJob;
  instance: Instance;
  /** OpenAI-compatible base URL of the policy server (…/v1). */
  policyUrl: string;
}

export interface RolloutPart {
  run(ctx: RolloutContext): Promise<Trajectory>;
  close(): Promise<void>;
}


export type { Scored };

export interface RewardPart {
  score(traj: Trajectory, instance: Instance): Promise<Scored>;
}

/** method §6: the user-state store seen from the orchestrator. */
export interface UserStatePart {
  /** Freeze the user's current state for a group; rollouts of the group read this id. */
  snapshot(userId: string): Promise<string>;
  /**
   * A number that grows with every applied change of the user's state (the store's latest
   * version). The group stage records it before applying, so a retry after a crash between
   * "applied" and "marked applied" sees the change and does not apply it twice.
   */
  version(userId: string): Promise<number>;
  /** Best-of-group online update: only the highest-reward trajectory may change state. */
  applyBest(group: { trajectory: Trajectory; reward: number }[], instance: Instance): Promise<void>;
  /** A fresh run: forget this run's states, then write the initial ones. */
  init(states: UserState[]): Promise<void>;
  /** JSON-safe records, one per user (a checkpoint's user_states.jsonl lines). */
  dump(): Promise<unknown[]>;
  /** Replace the run's states with dumped records (resume). */
  restore(records: unknown[]): Promise<void>;
  close(): Promise<void>;
}

/** One policy-token sequence for the trainer (method §5: only policy tokens carry loss). */
export interface TrainSequence {
  promptIds: number[];
  completionIds: number[];
  oldLogprobs: number[]; // server logprobs at sampling time
  advantage: number; // A_i of the trajectory, shared by all of its turns
  /** Index of its trajectory in the update (group * G + i): the loss unit of grpo.lossAggregation = trajectory. */
  trajectory: number;
  /** The constraint the turn was sampled under (rollout.constrained); the trainer replays its masks. */
  constraint?: TurnConstraint;
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
