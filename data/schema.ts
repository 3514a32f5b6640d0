// method §2: the data model. Instances and user states are JSONL, one record per line.
// Field-level rules live in the zod schemas; cross-record rules (duplicate ids, IEG
// cycles, unknown edge endpoints...) live in data/validate.ts.
import { z } from 'zod';
import { PersonaSchema } from './persona.ts';

/** An elicitation target e_i = (g_i, q_i_seed, a_i_seed, w_i, eta_i). Never shown to the policy. */
export const TargetSchema = z
  .object({
    id: z.string().min(1),
    /** g_i: what the target is about (used by reward matching and the simulator). */
    description: z.string().min(1),
    seedQuestion: z.string().min(1),
    seedAnswer: z.string(), // emptiness is reported by validate with the instance id
    weight: z.number(), // w_i >= 0, finiteness checked by validate
    essential: z.boolean().default(false), // eta_i
    criterion: z.string().optional(), // rubric text; appended to g_i for matching (method §4)
    lateActivatable: z.boolean().default(false), // inactive until a parent slot is covered
    /** The canonical slot memory of this target (paper "Offline SFT state"): SFT names its slot so; default the target id. */
    slot: z
      .object({ name: z.string().regex(/^[a-z][a-z0-9_]*$/), purpose: z.string().min(1) })
      .strict()
      .optional(),
  })
  .strict();

export const SPLITS = ['train', 'test'] as const;

export const InstanceSchema = z
  .object({
    id: z.string().min(1),
    userId: z.string().min(1),
    taskId: z.string().min(1),
    split: z.string(), // checked against SPLITS by validate so the error names the value
    query: z.string().min(1),
    profile: z.string().default(''),
    /** Facts visible to the simulator only: text, a list of facts, or an object of attributes (data/persona.ts). */
    persona: PersonaSchema.default([]),
    targets: z.array(TargetSchema),
    /** IEG edges [parent, child] over target ids; the query is the implicit root. */
    edges: z.array(z.tuple([z.string(), z.string()])).default([]),
    /**
     * Offline profile memory of a training instance (paper "Offline SFT state"): reusable facts
     * from the user's other training instances, none of this instance's target values. SFT
     * steps show it instead of `profile` when present.
     */
    offlineProfile: z.string().optional(),
  })
  .strict();

/** A slot-level episodic memory (method §2). Embeddings live in the store, not in the file. */
export const MemorySchema = z
  .object({
    name: z.string().min(1),
    purpose: z.string(),
    value: z.string().min(1),
    sourceInstance: z.string().optional(),
  })
  .strict();

export const UserStateSchema = z
  .object({
    userId: z.string().min(1),
    profile: z.string().default(''),
    memories: z.array(MemorySchema).default([]),
  })
  .strict();

export type Target = z.output<typeof TargetSchema>;
export type Instance = z.output<typeof InstanceSchema>;
export type Memory = z.output<typeof MemorySchema>;
export type UserState = z.output<typeof UserStateSchema>;
export type Split = (typeof SPLITS)[number];

/** method §4: g_i text = description plus the rubric criterion when present. */
export function targetText(t: Target): string {
  return t.criterion ? `${t.description} ${t.criterion}` : t.description;
}
