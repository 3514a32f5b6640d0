// The grammars each environment's policy samples under with rollout.constrained (method §13), as
// data for the trainer's mask replay (structured/turn-masks.ts specOf: a turn records its spec's
// hash, the trainer rebuilds the spec from these). The trainer imports no environment: the
// workers hand it Environment.grammars(), `gsteer trainer serve` EVERY_GRAMMAR.
import type { PolicyGrammar } from '../../structured/constraint-spec.ts';
import { POLICY_GRAMMAR } from '../../structured/turn/grammar-ebnf.ts';
import { CLARIFIER_ACTIONS, menuGrammarEbnf } from '../../structured/turn/menu-grammar.ts';
import { refinerGrammarEbnf } from '../../structured/qref/turn-ebnf.ts';

/** G-STEER's policy grammar and the Ask/Stop clarifier's menu grammar (variant clarifier; rollout/policy-constraint.ts). */
export const GSTEER_GRAMMARS: readonly PolicyGrammar[] = [
  { grammar: POLICY_GRAMMAR, filter: 'policy_turn' },
  { grammar: menuGrammarEbnf(CLARIFIER_ACTIONS), filter: 'policy_turn' },
];

/** The QREF refiner's grammar for qref.turn.maxQueries (rollout/agent/refiner-policy.ts). */
export const qrefGrammars = (maxQueries: number): PolicyGrammar[] => [{ grammar: refinerGrammarEbnf(maxQueries), filter: 'refiner_turn' }];

/** The most queries a refiner grammar allows (configs/schema.ts checks qref.turn.maxQueries against it). */
export const MAX_REFINER_QUERIES = 16;

/** Every environment's grammars at every setting a config allows: what `gsteer trainer serve`, which trains any run, replays under. */
export const EVERY_GRAMMAR: readonly PolicyGrammar[] = [
  ...GSTEER_GRAMMARS,
  ...Array.from({ length: MAX_REFINER_QUERIES }, (_, k) => qrefGrammars(k + 1)).flat(),
];
