// The IntentRL-style clarifier's evidence for the reward (method §8.5, paper "Baselines": the
// same IEG-scaffolded trajectories and interaction-cost objective as G-STEER, without slot
// tracking). The clarifier writes an empty STATE, so the alignment term of method §4 would see
// no covered slot and its coverage would always be 0. Its evidence is the dialogue instead:
// each Ask turn that got an informative answer (not blank, not the simulator's non-committal
// line) is one covered slot named by the question, with the answer as purpose and value, so
// the slot text `v_j = name + " " + purpose` (method §4.2) is "question answer" and is matched
// to the targets by meaning exactly as G-STEER's slots are. Nothing hidden is read: the
// simulator's grounding (targetId) is not used.
import { NON_COMMITTAL, type EvidenceSlot, type Trajectory } from '../core/types.ts';

/** [turns] -> [M] covered slots, one per informative answer, in dialogue order. */
export function dialogueSlots(traj: Pick<Trajectory, 'turns'>): EvidenceSlot[] {
  const out: EvidenceSlot[] = [];
  for (const t of traj.turns) {
    const o = t.observation;
    if (o.kind !== 'answer') continue;
    const answer = o.answer.replace(/\s+/g, ' ').trim();
    if (!answer || answer === NON_COMMITTAL) continue;
    out.push({ name: o.question.replace(/\s+/g, ' ').trim(), purpose: answer, status: 'covered', value: answer, source: 'dialogue' });
  }
  return out;
}
