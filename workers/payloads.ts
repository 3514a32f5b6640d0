// Queue payloads (method §10.1): versioned, read-only records. Bulky arrays (token ids,
// logprobs, trajectories, advantages) live in the run directory; jobs carry their paths.
// One update = a three-level BullMQ flow:
//   update (queue `updates`) <- groups (queue `groups`) <- G rollouts (queue `rollouts`).
import { z } from 'zod';

const base = {
  v: z.literal(1),
  runId: z.string().regex(/^[A-Za-z0-9._-]+$/),
  /** Incremented by every `gsteer resume`, so job ids of a resumed run never collide with stale ones. */
  epoch: z.number().int().min(0),
  step: z.number().int().positive(), // the update this work feeds (1-based)
};

export const RolloutJobSchema = z
  .object({
    ...base,
    groupId: z.string(),
    index: z.number().int().min(0), // position in the group
    instanceId: z.string(),
    userId: z.string(),
    policyVersion: z.number().int().min(0),
    /** Adapter name the policy server knows (`policy-v12`); requests name it in `model`. */
    model: z.string(),
    snapshotId: z.string(),
    seed: z.number().int(), // sampling seed derived from (run seed, step, group, index)
    trajPath: z.string(), // where the trajectory JSON is written (relative to the run dir)
  })
  .strict()
  .readonly();

export const GroupJobSchema = z
  .object({
    ...base,
    groupId: z.string(),
    groupIndex: z.number().int().min(0),
    instanceId: z.string(),
    userId: z.string(),
    policyVersion: z.number().int().min(0),
    snapshotId: z.string(),
    groupSize: z.number().int().min(1),
    groupPath: z.string(), // the group result JSON (rewards, advantages, trajectory refs)
    /**
     * Set on group 0 of an update admitted before the group stage of update `afterStep` was
     * done (no user in common): it applies only once the controller has dumped that step's
     * user states, so user-state updates still apply in update order.
     */
    afterStep: z.number().int().positive().optional(),
  })
  .strict()
  .readonly();

export const UpdateJobSchema = z
  .object({
    ...base,
    /** The adapter version this update produces (= step). */
    policyVersion: z.number().int().positive(),
    groupIds: z.array(z.string()),
  })
  .strict()
  .readonly();

export type RolloutJob = z.output<typeof RolloutJobSchema>;
export type GroupJob = z.output<typeof GroupJobSchema>;
export type UpdateJob = z.output<typeof UpdateJobSchema>;

/** What a rollout job returns to its group parent (the trajectory itself is on disk). */
export const RolloutResultSchema = z
  .object({
    index: z.number().int(),
    trajPath: z.string(),
    /** The trajectory was already on disk, whole and of this very job (a resumed run's in-flight episode): kept, not sampled again. */
    reused: z.boolean().optional(),
  })
  .strict();
export type RolloutResult = z.output<typeof RolloutResultSchema>;

/** What a group job returns to its update parent. */
export const GroupResultSchema = z.object({ groupId: z.string(), dropped: z.boolean(), reason: z.string().optional(), groupPath: z.string() }).strict();
export type GroupResult = z.output<typeof GroupResultSchema>;

/** Trainer step statistics (TRL names) returned by an update job. */
export const TrainStatsSchema = z
  .object({
    loss: z.number(),
    clip_ratio: z.number(),
    grad_norm: z.number(),
    entropy: z.number(),
    num_tokens: z.number(),
    train_seconds: z.number(),
    /** More trainer diagnostics under their logged (TRL) names, e.g. clip_ratio/low_mean, sampling/*. */
    diagnostics: z.record(z.string(), z.number()).optional(),
  })
  .strict();
export type TrainStats = z.output<typeof TrainStatsSchema>;

export const UpdateResultSchema = z
  .object({
    step: z.number().int(),
    policyVersion: z.number().int(),
    adapterPath: z.string(), // relative to the run dir
    stats: TrainStatsSchema,
    groupsTrained: z.number().int(),
    /** advantages/mean|std|min|max and frac_reward_zero_std over the update's groups. */
    advantageStats: z.record(z.string(), z.number()),
  })
  .strict();
export type UpdateResult = z.output<typeof UpdateResultSchema>;

/** Parse a payload at a queue boundary; a malformed one is a bug upstream, never retried. */
export function parsePayload<S extends z.ZodType>(schema: S, data: unknown, what: string): z.output<S> {
  const r = schema.safeParse(data);
  if (!r.success) throw new Error(`malformed ${what} payload: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}
