// The group stage's record on disk (groups/<groupId>.json): rewards with every component,
// the best trajectory, and the per-episode counts the metrics need. The update job and the
// controller read it by path; Redis only carries the path.
import { readFileSync } from 'node:fs';
import type { EnvInvalidReason, InvalidReason, Termination, Trajectory } from '../core/types.ts';
import type { Scored } from '../reward/types.ts';

export interface EpisodeCounts {
  turns: number;
  askCount: number;
  retrieveCount: number;
  termination: Termination;
  completionTokens: number;
  invalidReason?: InvalidReason | EnvInvalidReason;
  constrainedTurns?: number; // turns sampled under the policy grammar (rollout.constrained)
  /** Prompt tokens over the turns, and of them those the server said it served from its prefix cache. */
  promptTokens?: number;
  cachedPromptTokens?: number;
  /** Oldest and newest adapter version that sampled its tokens (equal: an episode finishes on its adapter, method §5.7). */
  policyVersions?: [number, number];
  /** Kept from disk instead of sampled again (a resumed run's finished in-flight episode, method §10.1). */
  reused?: boolean;
}

export interface GroupFile {
  v: 1;
  groupId: string;
  step: number;
  instanceId: string;
  userId: string;
  policyVersion: number;
  snapshotId: string;
  dropped: boolean;
  reason?: string;
  trajPaths: string[]; // by index, relative to the run dir
  scores: Scored[]; // by index
  best: number; // index of the highest total reward (lowest index on ties)
  episodes: EpisodeCounts[];
  /** True once the best trajectory's user-state update was applied (a retry skips it). */
  applied: boolean;
  /** The user's state version just before the update was applied (see UserStatePart.version). */
  userVersionBefore?: number;
  /** Dropped as late (grpo.groupDeadlineMs, method §5.12): how many of its episodes were still unfinished. */
  late?: number;
}

export function episodeCounts(t: Trajectory, reused = false): EpisodeCounts {
  const versions = t.turns.flatMap((turn) => (turn.tokens.policyVersion === undefined ? [] : [turn.tokens.policyVersion]));
  return {
    turns: t.turns.length,
    askCount: t.askCount,
    retrieveCount: t.retrieveCount,
    termination: t.termination,
    completionTokens: t.turns.reduce((n, turn) => n + turn.tokens.completionIds.length, 0),
    ...(t.invalidReason ? { invalidReason: t.invalidReason } : {}),
    constrainedTurns: t.turns.filter((turn) => turn.constraint).length,
    promptTokens: t.turns.reduce((n, turn) => n + turn.tokens.promptIds.length, 0),
    cachedPromptTokens: t.turns.reduce((n, turn) => n + (turn.tokens.cachedPromptTokens ?? 0), 0),
    ...(versions.length ? { policyVersions: [Math.min(...versions), Math.max(...versions)] as [number, number] } : {}),
    ...(reused ? { reused } : {}),
  };
}

/** argmax of the totals; ties go to the lowest index so the choice is deterministic. */
export function bestIndex(scores: readonly Scored[]): number {
  let best = 0;
  scores.forEach((s, i) => {
    if (s.reward > (scores[best] as Scored).reward) best = i;
  });
  return best;
}

export function readGroupFile(path: string): GroupFile {
  return JSON.parse(readFileSync(path, 'utf8')) as GroupFile;
}
