// method §8 / paper "Baselines": every method shares the environment (simulator, frozen user
// memory, parser, max turns) and differs only by action menu and prompt. `gsteer` is the
// trained policy with its own prompt (rollout/prompt.ts SYSTEM_PROMPT, slot tracking); the
// prompting baselines use the generic prompt restricted to their menu (baselineSystemPrompt),
// with no slot tracking. A turn outside the menu is an invalid turn (rollout/episode.ts).
import type { ActionKind } from '../core/types.ts';
import { InputError } from '../util/errors.ts';

export interface Baseline {
  label: string; // as in the paper's Table 2
  /** undefined = the G-STEER prompt and all actions. */
  actions?: readonly ActionKind[];
}

export const BASELINES = {
  gsteer: { label: 'G-STEER' },
  direct: { label: 'Direct Rewrite', actions: ['STOP'] },
  memory_rag: { label: 'Memory-RAG Agent', actions: ['RETRIEVE', 'STOP'] },
  clarify: { label: 'Clarification Agent', actions: ['ASK', 'STOP'] },
  memory_clarify: { label: 'Mem.+Clarif. Agent', actions: ['RETRIEVE', 'ASK', 'STOP'] },
  // The trainable IntentRL-style Ask/Stop clarifier (`variant: clarifier`): evaluate its adapter with --baseline clarifier_trained.
  clarifier_trained: { label: 'IntentRL-style Clarifier', actions: ['ASK', 'STOP'] },
} as const satisfies Record<string, Baseline>;

export type BaselineName = keyof typeof BASELINES;

export function baselineNamed(name: string): { name: BaselineName } & Baseline {
  if (!(name in BASELINES))
    throw new InputError(`--baseline "${name}" is not a known method; use one of ${Object.keys(BASELINES).join(', ')}`);
  return { name: name as BaselineName, ...BASELINES[name as BaselineName] };
}
