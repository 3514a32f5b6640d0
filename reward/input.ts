// Building a RewardInput: from a Trajectory record (the group worker) or from a file the
// user wrote (`gsteer reward`; format in reward/README.md).
import { z } from 'zod';
import type { Instance } from '../data/schema.ts';
import type { Trajectory } from '../core/types.ts';
import { InputError } from '../util/errors.ts';
import { dialogueSlots } from './dialogue-slots.ts';
import type { RewardInput } from './types.ts';

/** The trajectory part of a RewardInput; the targets come from the instance. */
export type TrajectorySummary = Omit<RewardInput, 'targets' | 'instanceId'>;

/**
 * `evidence`: `state` (G-STEER: the final evidence state's covered slots) or `dialogue` (the
 * IntentRL-style clarifier, which tracks no slots: one slot per informative answer,
 * dialogue-slots.ts).
 */
export function rewardInputFromTrajectory(traj: Trajectory, instance: Pick<Instance, 'id' | 'targets'>, evidence: 'state' | 'dialogue' = 'state'): RewardInput {
  if (traj.instanceId !== instance.id)
    throw new InputError(
      `trajectory ${traj.groupId}/${traj.index} is for instance "${traj.instanceId}" but was scored against instance "${instance.id}"; pass the matching instance`,
    );
  return {
    instanceId: instance.id,
    targets: instance.targets,
    finalSlots: evidence === 'dialogue' ? dialogueSlots(traj) : traj.finalSlots,
    askedQuestions: traj.askedQuestions,
    askCount: traj.askCount,
    retrieveCount: traj.retrieveCount,
    termination: traj.termination,
  };
}

const SlotSchema = z
  .object({
    name: z.string().min(1),
    purpose: z.string().default(''),
    status: z.enum(['uncovered', 'partial', 'covered']),
    value: z.string().default(''),
    source: z.enum(['profile', 'memory', 'dialogue']).default('dialogue'),
  })
  .loose();

const count = z.number().int().min(0);

/** The small JSON (or the matching fields of a full Trajectory record; other fields are ignored). */
export const TrajectorySummarySchema = z
  .object({
    finalSlots: z.array(SlotSchema),
    askedQuestions: z.array(z.string()).default([]),
    askCount: count.optional(),
    retrieveCount: count.default(0),
    termination: z.enum(['stop', 'invalid', 'max_turns']),
  })
  .loose();

export function parseTrajectorySummary(raw: unknown, source: string): TrajectorySummary {
  const r = TrajectorySummarySchema.safeParse(raw);
  if (!r.success) {
    const problems = r.error.issues.map((i) => `${source}: ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new InputError(`invalid trajectory file (format in reward/README.md):\n  ${problems.join('\n  ')}`, problems);
  }
  const d = r.data;
  const askCount = d.askCount ?? d.askedQuestions.length;
  if (askCount !== d.askedQuestions.length)
    throw new InputError(
      `${source}: askCount = ${askCount} but askedQuestions has ${d.askedQuestions.length} entries; every Ask turn has one question, so make them agree (or omit askCount)`,
    );
  return {
    finalSlots: d.finalSlots.map((s) => ({ name: s.name, purpose: s.purpose, status: s.status, value: s.value, source: s.source })),
    askedQuestions: d.askedQuestions,
    askCount,
    retrieveCount: d.retrieveCount,
    termination: d.termination,
  };
}
