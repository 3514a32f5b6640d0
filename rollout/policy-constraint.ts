// What a constrained policy call asks for and what its turn records (rollout.constrained,
// issue 14): the policy grammar as vLLM's `structured_outputs.grammar`, and gsteer serve's
// `policy_turn` token filter on top (no repeated slot name, length caps; vLLM ignores the
// field); the QREF refiner's grammar with the `refiner_turn` filter (rollout/agent/refiner-policy.ts). The record says what the server reported applying, or, when it reports nothing
// (vLLM), the grammar alone; the trainer's replay then checks that every id was allowed.
import { POLICY_GRAMMAR } from '../structured/turn/grammar-ebnf.ts';
import { menuGrammarEbnf } from '../structured/turn/menu-grammar.ts';
import { specHash, TOKEN_FILTERS } from '../structured/constraint-spec.ts';
import type { AppliedConstraint, CompletionRequest } from './policy-client.ts';
import type { ActionKind, TurnConstraint } from '../core/types.ts';

export const POLICY_CONSTRAINT: NonNullable<CompletionRequest['constraint']> = { grammar: POLICY_GRAMMAR, tokenFilter: 'policy_turn' };

/** What a call samples under: the policy grammar, or a baseline's menu grammar (structured/turn/menu-grammar.ts; method §8.5). */
export function constraintFor(actions: readonly ActionKind[] | undefined): NonNullable<CompletionRequest['constraint']> {
  return actions ? { grammar: menuGrammarEbnf(actions), tokenFilter: 'policy_turn' } : POLICY_CONSTRAINT;
}

export function turnConstraint(applied: AppliedConstraint | undefined, maxTokens: number, grammar: string = POLICY_GRAMMAR): TurnConstraint {
  if (!applied) return { tokenFilter: null, tokenFilterVersion: null, specSha256: specHash({ type: 'grammar', grammar }), maxTokens, reported: false };
  const filter = TOKEN_FILTERS.find((f) => f === applied.tokenFilter) ?? null;
  return {
    tokenFilter: filter,
    tokenFilterVersion: filter ? applied.tokenFilterVersion : null,
    specSha256: applied.specSha256,
    maxTokens: applied.maxTokens,
    reported: true,
  };
}
