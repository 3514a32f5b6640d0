// What each build step answers (method §2; paper "Elicitation Target Construction",
// "Intent Elicitation Graph", "User State Construction"). The LLM steps answer the same
// shapes under the zod schemas in schemas.ts; the embedded rules (rules.ts) compute them.
import type { RawInstance } from '../raw/schema.ts';

export const DROP_REASONS = ['superficial', 'redundant', 'narrow', 'in_query', 'ungrounded'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** A candidate elicitation target, with the rubric items (0-based) it comes from. */
export interface Candidate {
  id: string;
  description: string;
  criterion: string;
  rubricItems: number[];
}

/** The validation verdict on one candidate (and the essential label of a kept one). */
export interface Decision {
  id: string;
  keep: boolean;
  reason: DropReason | null;
  essential: boolean;
}

export interface Seed {
  id: string;
  seedQuestion: string;
  seedAnswer: string;
}

export interface Ieg {
  edges: { parent: string; child: string }[];
  lateActivatable: string[];
}

/** A canonical slot: the name and purpose a slot memory of this target carries (its value is the seed answer). */
export interface Slot {
  id: string;
  name: string;
  purpose: string;
}

/** A kept target with everything the steps so far gave it. */
export interface BuiltTarget {
  id: string;
  description: string;
  criterion: string;
  weight: number;
  essential: boolean;
  seedQuestion: string;
  seedAnswer: string;
}

export type { RawInstance };
