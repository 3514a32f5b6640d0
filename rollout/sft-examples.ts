// method §7: each step of a scaffolded trajectory becomes one SFT example (data/sft/example.ts).
// The input is exactly what the policy sees at that turn in a rollout (prompt.ts: query,
// profile, the evidence state it wrote on the previous turn, the action/observation
// history); the target is the canonical text of the next turn (structured/turn/grammar.ts).
import type { Instance } from '../data/schema.ts';
import { buildPolicyMessages, type HistoryEntry } from './prompt.ts';
import { renderTurn } from '../structured/turn/grammar.ts';
import { CLARIFIER_ACTIONS } from '../structured/turn/menu-grammar.ts';
import type { EvidenceSlot } from '../core/types.ts';
import type { SftTrajectory } from '../data/sft/build.ts';
import type { SftExample } from '../data/sft/example.ts';
import { sftProfile } from '../data/sft/memory.ts';

/** `variant` clarifier: the prompt the clarifier sees in rollouts (its Ask/Stop menu, the frozen profile). */
export function trajectoryExamples(inst: Instance, t: SftTrajectory, maxTurns: number, variant: 'gsteer' | 'clarifier' = 'gsteer'): SftExample[] {
  const history: HistoryEntry[] = [];
  let state: EvidenceSlot[] = [];
  const clarifier = variant === 'clarifier';
  return t.steps.map((s, i) => {
    const input = buildPolicyMessages({
      query: inst.query,
      profile: sftProfile(inst),
      state,
      history: [...history],
      turn: i + 1,
      maxTurns,
      ...(clarifier ? { actions: CLARIFIER_ACTIONS } : {}),
    });
    const ex: SftExample = {
      instanceId: inst.id,
      userId: inst.userId,
      trajectoryId: t.id,
      kind: t.scenario.kind,
      step: i,
      steps: t.steps.length,
      action: s.turn.action,
      input,
      target: renderTurn(s.turn),
    };
    history.push({ action: s.turn.action, execute: s.turn.execute, observation: s.observation });
    state = s.turn.state;
    return ex;
  });
}
