// The seams between the queues and the work they carry (interfaces in front of infrastructure): the rollout worker
// runs an episode, the group stage scores a group and updates user state, the trainer
// worker steps the LoRA (trainer/update/: in process, or through the Tinker contract). Two
// implementations sit behind these interfaces:
//   real      — rollout/, reward/, trainer/ (workers/real-parts.ts)
//   synthetic — a toy softmax policy served over real HTTP with a real GRPO step on it
//               (workers/synthetic/), for orchestration tests and the benchmark.
// `GSTEER_PARTS=synthetic` in the environment selects the synthetic parts; nothing falls
// back to them silently.
import type { RunConfig } from '../configs/schema.ts';
import type { Trajectory } from '../core/types.ts';
import type { RewardPart, RolloutContext as EnvRolloutContext, UserStatePart } from '../rollout/env/types.ts';
import type { Scored } from '../reward/types.ts';
import type { RolloutJob } from './payloads.ts';
import type { TrainerPart } from '../trainer/update/part.ts';

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

/** The trainer's side (trainer/update/part.ts): what an update needs and gives back. */
export type { TrainerPart, TrainSequence } from '../trainer/update/part.ts';

/** Where the trainer part finds the run: its folder (adapter versions, trainer_calls.jsonl) and the trainer service gsteer started. */
export interface TrainerContext {
  runDir: string;
  trainerUrl: string | null;
  log: (line: string) => void;
}

export interface Parts {
  kind: 'real' | 'synthetic';
  rollout(): Promise<RolloutPart>;
  reward(): Promise<RewardPart>;
  users(): Promise<UserStatePart>;
  trainer(ctx?: TrainerContext): Promise<TrainerPart>;
}
