// Hand-built trajectories for judge and state-update tests (no policy server needed).
import type { EvidenceSlot, Observation, Trajectory } from '../../../core/types.ts';

export const covered = (name: string, purpose: string, value: string, source: EvidenceSlot['source'] = 'dialogue'): EvidenceSlot => ({
  name,
  purpose,
  status: 'covered',
  source,
  value,
});

export const answer = (question: string, text: string, targetId: string | null = 't'): Observation => ({ kind: 'answer', question, answer: text, targetId });

export function trajectory(index: number, finalSlots: EvidenceSlot[], observations: Observation[], snapshotId = 'u1@1'): Trajectory {
  return {
    version: 1,
    runId: 'run',
    instanceId: 'inst-1',
    userId: snapshotId.slice(0, snapshotId.lastIndexOf('@')),
    groupId: 'g1',
    index,
    policyVersion: 0,
    snapshotId,
    turns: observations.map((observation, i) => ({
      index: i,
      tokens: { promptIds: [1], completionIds: [2], logprobs: [-0.1] },
      completionText: '',
      parsed: { ok: false, reason: 'empty', detail: 'hand-built' },
      observation,
    })),
    finalSlots,
    askedQuestions: observations.flatMap((o) => (o.kind === 'answer' ? [o.question] : [])),
    retrieveCount: observations.filter((o) => o.kind === 'memory').length,
    askCount: observations.filter((o) => o.kind === 'answer').length,
    termination: 'stop',
    refinedQuery: 'q*',
  };
}
