// The memory judge of the online user-state update (method §6): which final covered slots of
// the group's best trajectory become memories, and whether the profile gains a sentence.
// Two judges: rule-based (judge-rule.ts, embedded default) and LLM (judge-llm.ts).
import type { Instance } from '../data/schema.ts';
import type { EvidenceSlot, Trajectory } from '../core/types.ts';
import type { UserSnapshot } from './user-store.ts';

/** Why a slot was kept or dropped; one value per method §6 criterion. */
export type JudgeReason =
  | 'kept'
  | 'not_covered' // only final covered slots are candidates
  | 'unsupported' // not directly supported by the interaction, or a weak inference
  | 'generic' // not specific to this user
  | 'assistant_advice'
  | 'temporary' // not useful later
  | 'sensitive' // unnecessarily sensitive information
  | 'in_profile' // already represented in the profile
  | 'rejected' // the LLM judge did not keep it (it gives no per-slot reason)
  | 'judge_error'; // the LLM judge's reply was malformed: keep nothing

export interface JudgeInput {
  instance: Instance;
  trajectory: Trajectory; // the group's best trajectory
  snapshot: UserSnapshot; // the user state the group read
}

export interface SlotVerdict {
  slot: EvidenceSlot;
  reason: JudgeReason;
}

export interface JudgeVerdict {
  verdicts: SlotVerdict[]; // one per final slot, in slot order
  /** One sentence for the profile, only for a durable, broadly reusable pattern. */
  profileSentence: string | null;
}

export interface MemoryJudge {
  judge(input: JudgeInput): Promise<JudgeVerdict>;
}

/** What the policy learned from the user in this trajectory: user answers and retrieved memories. */
export function evidenceTexts(t: Trajectory): string[] {
  const out: string[] = [];
  for (const turn of t.turns) {
    const o = turn.observation;
    // A non-committal answer is included too: it has no content words a slot value could match.
    if (o.kind === 'answer') out.push(o.answer);
    else if (o.kind === 'memory') for (const r of o.results) out.push(`${r.name} ${r.purpose} ${r.value}`);
  }
  return out;
}
