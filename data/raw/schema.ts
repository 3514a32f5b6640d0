// The raw input format `gsteer data build` reads (data/raw/README.md): a PDR-Bench-shaped
// benchmark as three JSONL files in one folder. Tasks carry the research query and the
// personalization rubric (items with weights, optionally tagged with PDR-Bench's P-Score
// dimension); users carry a structured persona and dynamic context / memory snippets;
// pairs name the (user, task) combinations to build, optionally with the user's own
// wording of the query and a pair-specific rubric (PDR-Bench generates P-Score criteria
// per task and persona).
import { z } from 'zod';
import { PersonaSchema } from '../persona.ts';

/** PDR-Bench P-Score dimensions: Goal Alignment, Content Alignment, Presentation Fit, Actionability & Practicality. */
export const RUBRIC_DIMENSIONS = ['goal', 'content', 'presentation', 'actionability'] as const;

export const RubricItemSchema = z
  .object({
    id: z.string().min(1).optional(),
    criterion: z.string().regex(/\S/, 'must not be blank'),
    // > 0: a weight-0 item gives its targets no weight in the reward, yet the essential rule could still pick them
    weight: z
      .number()
      .finite()
      .gt(0, 'must be > 0 (a weight-0 item would make targets that count for nothing, yet could be essential); drop the item or give it its weight'),
    dimension: z.enum(RUBRIC_DIMENSIONS).optional(),
  })
  .strict();

export const RawTaskSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only'),
    domain: z.string().min(1),
    query: z.string().regex(/\S/, 'must not be blank'),
    rubric: z.array(RubricItemSchema).default([]),
  })
  .strict();

export const RawUserSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only'),
    persona: PersonaSchema,
    /** Dynamic context: app-interaction traces and recorded memory snippets, one per string. */
    context: z.array(z.string()).default([]),
    /** The static profile p_u the policy sees (method §2); empty when absent. */
    profile: z.string().default(''),
  })
  .strict();

export const SPLIT_NAMES = ['train', 'test'] as const;

export const RawPairSchema = z
  .object({
    /** Instance id; default `${userId}-${taskId}`. */
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only')
      .optional(),
    userId: z.string().min(1),
    taskId: z.string().min(1),
    /** The user's wording of the task query; default the task's query. */
    query: z.string().regex(/\S/, 'must not be blank').optional(),
    /** Pair-specific rubric items; default the task's rubric. */
    rubric: z.array(RubricItemSchema).optional(),
    /** A fixed split; absent -> `gsteer data split` chooses (Table 1 protocol). */
    split: z.enum(SPLIT_NAMES).optional(),
  })
  .strict();

export type RubricItem = z.output<typeof RubricItemSchema>;
export type RawTask = z.output<typeof RawTaskSchema>;
export type RawUser = z.output<typeof RawUserSchema>;
export type RawPair = z.output<typeof RawPairSchema>;

/** One (user, task) pair with its task and user resolved: what each build step works on. */
export interface RawInstance {
  id: string;
  user: RawUser;
  task: RawTask;
  query: string;
  rubric: RubricItem[];
  split?: (typeof SPLIT_NAMES)[number];
}

export interface RawDataset {
  dir: string;
  tasks: RawTask[];
  users: RawUser[];
  pairs: RawInstance[];
}

export const RAW_FILES = { tasks: 'tasks.jsonl', users: 'users.jsonl', pairs: 'pairs.jsonl' } as const;
