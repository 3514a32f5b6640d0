// The turn grammar of a prompting baseline (method §8.5, paper "Baselines"): each baseline
// writes its own form of the policy turn, and under constrained sampling
// (rollout.constrained) it samples under this grammar, so an action outside its menu cannot
// be sampled at all (before, the shared policy grammar allowed it and the turn was invalid).
// The form, in xgrammar's EBNF like structured/turn/grammar-ebnf.ts:
//   STATE: with no slot lines (the baselines track no evidence slots: "Leave STATE empty"),
//   PLAN: one line, ACTION: one of the baseline's menu only, EXECUTE: one line (the memory
//   query, the question, or the refined query q*). Direct Rewrite's menu is Stop alone, so its
//   only form is a rewrite: "ACTION: STOP" and EXECUTE = q*.
// Every text it accepts is accepted by the policy grammar and parses with parseTurn
// (structured/turn/grammar.ts) to a turn with an empty state and a menu action; the trainer, the
// token filter (structured/policy-filter.ts) and the parser are unchanged. The filter's
// end-within-max_tokens rule measures the shortest completion of the policy language, which
// can be up to 5 bytes shorter than this grammar's ("ASK" where only "STOP" or "RETRIEVE" is
// allowed); a turn that starts its ACTION that close to max_tokens can end as
// grammar_dead_end, never with an action off the menu.
import type { ActionKind } from '../../core/types.ts';
import { ACTIONS } from './grammar.ts';

/** The trainable IntentRL-style clarifier's menu (`variant: clarifier`): Ask and Stop only. */
export const CLARIFIER_ACTIONS: readonly ActionKind[] = ['ASK', 'STOP'];

/** The menu in the canonical order (RETRIEVE, ASK, STOP), checked. */
export function menuOf(actions: readonly ActionKind[]): ActionKind[] {
  const bad = actions.filter((a) => !ACTIONS.includes(a));
  if (bad.length) throw new Error(`internal: unknown action(s) ${bad.join(', ')} in a baseline menu`);
  const menu = ACTIONS.filter((a) => actions.includes(a));
  if (!menu.includes('STOP')) throw new Error(`internal: a baseline menu must include STOP to end with a refined query (menu: ${menu.join(', ')})`);
  return menu;
}

export function menuGrammarEbnf(actions: readonly ActionKind[]): string {
  const menu = menuOf(actions);
  return `# gsteer baseline turn, menu ${menu.join('/')} (structured/turn/menu-grammar.ts), xgrammar EBNF.
root ::= (sp* "\\n")* "STATE:" sp* ("\\n" sp*)* "\\n" plan ("\\n" sp*)* "\\n" action ("\\n" sp*)* "\\n" execute ("\\n" sp*)*
plan ::= "PLAN:" sp* mark rest
action ::= "ACTION:" sp* (${menu.map((a) => JSON.stringify(a)).join(' | ')}) sp*
execute ::= "EXECUTE:" sp* mark rest
mark ::= [^\\n \\t\\v\\f\\r]
rest ::= [^\\n]*
sp ::= [ \\t\\v\\f\\r]
`;
}
