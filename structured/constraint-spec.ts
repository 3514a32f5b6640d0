// What a request asks to constrain (vLLM's StructuredOutputsParams, one kind per request)
// plus gsteer's optional token filter, as a plain record: the rollout stores it with each
// constrained turn and the trainer compiles the same record to replay the masks.
import { createHash } from 'node:crypto';
import type { TokenFilterKind } from '../core/types.ts';

export type { TokenFilterKind };

/** Token filters gsteer serve can run after the grammar mask (policy-filter.ts: G-STEER's turn; refiner-filter.ts: the QREF refiner's); the kind is the turn record's (core/types.ts). */
const FILTERS: Record<TokenFilterKind, true> = { policy_turn: true, refiner_turn: true };
export const TOKEN_FILTERS = Object.keys(FILTERS) as readonly TokenFilterKind[];

export type ConstraintSpec =
  | { type: 'grammar'; grammar: string; filter?: TokenFilterKind }
  | { type: 'regex'; regex: string }
  | { type: 'choice'; choice: string[] }
  | { type: 'json'; schema: string; anyWhitespace: boolean }
  | { type: 'json_object'; anyWhitespace: boolean };

/**
 * What a policy call samples under: a grammar and the token filter asked on top (vLLM ignores the
 * filter). An environment lists its own (rollout/env/grammars.ts); the trainer replays a turn's
 * masks under the one whose spec hash the turn recorded (turn-masks.ts specOf).
 */
export interface PolicyGrammar {
  grammar: string;
  filter: TokenFilterKind;
}

/** The request field a spec came from, for 400 messages. */
export function specField(spec: ConstraintSpec): string {
  return spec.type === 'json_object' ? 'structured_outputs.json_object' : `structured_outputs.${spec.type === 'json' ? 'json' : spec.type}`;
}

/** Stable identity of a spec (cache key part, and what responses report). */
export function specHash(spec: ConstraintSpec): string {
  const canonical = JSON.stringify(spec, Object.keys(spec).sort());
  return createHash('sha256').update(canonical).digest('hex');
}
