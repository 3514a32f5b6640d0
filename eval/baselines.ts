// method §8 / paper "Baselines": every method shares the environment (simulator, frozen user
// memory, parser, max turns) and differs only by action menu and prompt; the two released
// checkpoints (Mistral-Interact, CEP) run in their own formats behind their endpoints and are
// mapped to Ask / Stop (eval/external/). `gsteer` is the
// trained policy with its own prompt (rollout/prompt.ts SYSTEM_PROMPT, slot tracking); the
// prompting baselines use the generic prompt restricted to their menu (baselineSystemPrompt),
// with no slot tracking. A turn outside the menu is an invalid turn (rollout/episode.ts).
import type { ActionKind } from '../core/types.ts';
import { InputError } from '../util/errors.ts';

export interface Baseline {
  label: string; // as in the paper's Table 2
  /** undefined = the G-STEER prompt and all actions. */
  actions?: readonly ActionKind[];
  /** A released checkpoint run in its own format behind its endpoint (eval/external/), not the policy server. */
  external?: 'mistral_interact' | 'cep';
}

export const BASELINES = {
  gsteer: { label: 'G-STEER' },
  direct: { label: 'Direct Rewrite', actions: ['STOP'] },
  memory_rag: { label: 'Memory-RAG Agent', actions: ['RETRIEVE', 'STOP'] },
  clarify: { label: 'Clarification Agent', actions: ['ASK', 'STOP'] },
  memory_clarify: { label: 'Mem.+Clarif. Agent', actions: ['RETRIEVE', 'ASK', 'STOP'] },
  // The trainable IntentRL-style Ask/Stop clarifier (`variant: clarifier`): evaluate its adapter with --baseline clarifier_trained.
  clarifier_trained: { label: 'IntentRL-style Clarifier', actions: ['ASK', 'STOP'] },
  // The released checkpoints (paper Table 7), each behind its own endpoint (eval.baselines; eval/external/).
  mistral_interact: { label: 'Mistral-Interact', actions: ['ASK', 'STOP'], external: 'mistral_interact' },
  cep_rewrite: { label: 'CEP-Clarify+Rewrite', actions: ['ASK', 'STOP'], external: 'cep' },
} as const satisfies Record<string, Baseline>;

export type BaselineName = keyof typeof BASELINES;

export function baselineNamed(name: string): { name: BaselineName } & Baseline {
  if (!(name in BASELINES)) throw new InputError(`--baseline "${name}" is not a known method; use one of ${Object.keys(BASELINES).join(', ')}`);
  return { name: name as BaselineName, ...BASELINES[name as BaselineName] };
}
