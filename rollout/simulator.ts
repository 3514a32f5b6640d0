// The user simulator (method §3): answers one clarification question grounded in the
// instance's targets (description, seed question, seed answer) and persona, never
// inventing a preference. Embedded seed-grounded version: simulator-seed.ts; LLM-backed
// version (Qwen3-32B in the paper): simulator-llm.ts.
import type { Instance, Target } from '../data/schema.ts';

export interface SimulatorAnswer {
  answer: string;
  /** The target the answer is grounded in; null for a non-committal reply or one from the persona alone. */
  targetId: string | null;
  /**
   * LLM simulator only: the accepted reply (the JSON text, thinking removed) for the
   * trajectories view, null when no reply was accepted; never shown to the policy.
   */
  reply?: string | null;
  /** LLM simulator only: why no reply was accepted (e.g. "reply_error:unclosed_think after 4 attempt(s)"). */
  replyError?: string;
}

/** What the user already said in this episode (both simulators use it). */
export interface DialogueSoFar {
  turns: { question: string; answer: string; targetId: string | null }[];
}

export interface UserSimulator {
  answer(question: string, instance: Instance, dialogue?: DialogueSoFar): Promise<SimulatorAnswer>;
}

/** The reply when neither the targets nor the persona support an answer (method §3). */
export { NON_COMMITTAL } from '../core/types.ts';

/**
 * Targets the user can speak to at this point of the dialogue. A late-activatable target
 * (method §2/§7) stays inactive until one of its IEG parents has been answered in this
 * episode; a late-activatable target without parents hangs off the query root and is
 * active from the start. Inactive targets are invisible to both simulators, so the user
 * does not volunteer a decision that only arises after its parent is settled.
 */
export function activeTargets(instance: Instance, dialogue?: DialogueSoFar): Target[] {
  const answered = new Set((dialogue?.turns ?? []).map((t) => t.targetId).filter((id): id is string => id !== null));
  return instance.targets.filter((t) => {
    if (!t.lateActivatable) return true;
    const parents = instance.edges.filter(([, child]) => child === t.id).map(([parent]) => parent);
    return parents.length === 0 || parents.some((p) => answered.has(p));
  });
}
