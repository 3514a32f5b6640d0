// Environments as plugins (method §13): what the workers need from a task. The orchestration
// (queues, schedule, group stage, trainer, checkpoints, resume, metrics) is the same for every
// environment; an environment supplies
//   - its instances (schema, loading and validation: `load`),
//   - the episode: the prompt of each turn, the turn grammar it samples under, how an action
//     changes the state, all inside `rollout().run` (a Trajectory with every policy call's ids
//     and logprobs, so the trainer needs nothing environment-specific),
//   - the reward with its components (`reward().score`), reported one by one,
//   - per-user state carried between groups (`users`; G-STEER's online update, method §6), or none,
//   - a trajectory view for the dashboard (`view`),
//   - the grammars its policy samples under (`grammars`), which the trainer replays masks with.
// G-STEER's clarification loop is one implementation (rollout/env/gsteer.ts), the QREF refiner
// the other (rollout/qref/env.ts); `env: gsteer | qref` in the config picks it (rollout/env/index.ts).
import type { RunConfig } from '../../configs/schema.ts';
import type { Trajectory } from '../../core/types.ts';
import type { UserState } from '../../data/schema.ts';
import type { Scored } from '../../reward/types.ts';
import type { PolicyGrammar } from '../../structured/constraint-spec.ts';

/** What the orchestration reads of an instance: the rest is the environment's. */
export interface EnvInstance {
  id: string;
  /** Whose state the instance reads; groups of one user apply their state updates in order. */
  userId: string;
  split: string;
}

/** The rollout job's fields an episode reads (workers/payloads.ts RolloutJob). */
export interface EpisodeJob {
  runId: string;
  groupId: string;
  index: number;
  policyVersion: number;
  model: string;
  snapshotId: string;
  seed: number;
}

export interface RolloutContext {
  job: EpisodeJob;
  instance: EnvInstance;
  /** OpenAI-compatible base URL of the policy server (…/v1). */
  policyUrl: string;
  /** Aborted when the episode is cancelled (its group was late, method §5.12); a part may stop early. */
  signal?: AbortSignal;
}

export interface RolloutPart {
  run(ctx: RolloutContext): Promise<Trajectory>;
  close(): Promise<void>;
}

export interface RewardPart {
  score(traj: Trajectory, instance: EnvInstance): Promise<Scored>;
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
  applyBest(group: { trajectory: Trajectory; reward: number }[], instance: EnvInstance): Promise<void>;
  /** A fresh run: forget this run's states, then write the initial ones. */
  init(states: UserState[]): Promise<void>;
  /** JSON-safe records, one per user (a checkpoint's user_states.jsonl lines). */
  dump(): Promise<unknown[]>;
  /** Replace the run's states with dumped records (resume). */
  restore(records: unknown[]): Promise<void>;
  close(): Promise<void>;
}

/** One turn of a trajectory as the dashboard lists it. */
export interface TurnView {
  action: string; // RETRIEVE | ASK | STOP, or INVALID (with the parser's reason), or the environment's own
  execute: string;
  plan: string;
  observation: string;
  /** LLM simulator: the reply the answer came from (JSON, thinking removed), or why none was accepted. */
  simulatorReply?: string;
}

export interface Environment {
  readonly name: RunConfig['env'];
  /** Every instance of the configured data, validated (InputError listing every problem). */
  load(): { instances: EnvInstance[]; warnings: string[] };
  rollout(runId: string): Promise<RolloutPart>;
  reward(): Promise<RewardPart>;
  users(runId: string): Promise<UserStatePart>;
  /** The trajectory's turns for people (dashboard, reports). */
  view(traj: Trajectory): TurnView[];
  /** The grammars its policy samples under (rollout.constrained; grammars.ts): the trainer replays each constrained turn's masks under the one it recorded. */
  grammars(): readonly PolicyGrammar[];
}

/** A user-state part for environments without per-user state: every snapshot is version 0. */
export const STATELESS_USERS: UserStatePart = {
  snapshot: async (userId) => `${userId}@0`,
  version: async () => 0,
  applyBest: async () => undefined,
  init: async () => undefined,
  dump: async () => [],
  restore: async () => undefined,
  close: async () => undefined,
};
