// The user simulator (method §3): answers one clarification question grounded in the
// instance's targets (description, seed question, seed answer) and persona, never
// inventing a preference. Embedded seed-grounded version: simulator-seed.ts; LLM-backed
// version (Qwen3-32B in the paper): simulator-llm.ts.
import { isActive } from '../data/ieg.ts';
import { memoryText } from '../data/sft/memory.ts';
import { targetText, type Instance, type Target } from '../data/schema.ts';
import { cosine, type Encoder } from '../core/encoder.ts';

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

/** What the user already said in this episode, and what the policy retrieved from memory (both simulators use it). */
export interface DialogueSoFar {
  turns: { question: string; answer: string; targetId: string | null }[];
  /** The memories Retrieve returned in this episode so far (a parent covered from memory activates its late children). */
  memory?: { name: string; purpose: string; value: string }[];
}

export interface UserSimulator {
  answer(question: string, instance: Instance, dialogue?: DialogueSoFar): Promise<SimulatorAnswer>;
}

/** The reply when neither the targets nor the persona support an answer (method §3). */
export { NON_COMMITTAL } from '../core/types.ts';

/**
 * Targets the user can speak to at this point of the episode (method §3.5). A late-activatable
 * target stays inactive until one of its IEG parents is covered, in the dialogue (the user
 * answered it) or from memory (`fromMemory`: targets a retrieved memory covers, LateActivation):
 * the same rule, data/ieg.ts isActive, that the SFT walk follows (method §7.4). Inactive
 * targets are invisible to both simulators, so the user does not volunteer a decision that only
 * arises after its parent is settled.
 */
export function activeTargets(instance: Instance, dialogue?: DialogueSoFar, fromMemory: ReadonlySet<string> = new Set()): Target[] {
  const covered = new Set(fromMemory);
  for (const t of dialogue?.turns ?? []) if (t.targetId !== null) covered.add(t.targetId);
  return instance.targets.filter((t) => isActive(instance, t.id, covered));
}

/**
 * Which targets the memories retrieved in an episode cover: a memory covers a target when
 * cos(phi(g_i), phi("name purpose value")) >= `threshold` (simulator.memoryThreshold, 0.55: the
 * paper's coverage threshold). Target vectors are kept per instance.
 */
export class LateActivation {
  private readonly cache = new Map<string, Float32Array[]>();

  constructor(
    private readonly encoder: Encoder,
    private readonly threshold: number,
  ) {}

  async fromMemory(instance: Instance, dialogue?: DialogueSoFar): Promise<Set<string>> {
    const memory = dialogue?.memory ?? [];
    const out = new Set<string>();
    if (!memory.length || !instance.targets.some((t) => t.lateActivatable)) return out;
    let targets = this.cache.get(instance.id);
    if (!targets) this.cache.set(instance.id, (targets = await this.encoder.embed(instance.targets.map(targetText))));
    const mem = await this.encoder.embed(memory.map((m) => memoryText({ name: m.name, purpose: m.purpose, value: m.value })));
    instance.targets.forEach((t, i) => {
      if (mem.some((m) => cosine(targets[i] as Float32Array, m) >= this.threshold)) out.add(t.id);
    });
    return out;
  }

  async active(instance: Instance, dialogue?: DialogueSoFar): Promise<Target[]> {
    return activeTargets(instance, dialogue, await this.fromMemory(instance, dialogue));
  }
}
