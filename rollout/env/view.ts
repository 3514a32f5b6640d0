// A trajectory's turns for people (the dashboard, reports): one view for every environment
// (method §13). A G-STEER turn shows its action, executed text, plan and what came back; a
// turn of another environment carries its own view (TurnRecord.env).
import type { Observation, Trajectory } from '../../core/types.ts';
import type { TurnView } from './types.ts';

const clipTo = (s: string, n = 400) => (s.length > n ? `${s.slice(0, n)}…` : s);

export function observationText(o: Observation): string {
  switch (o.kind) {
    case 'memory':
      return o.results.map((r) => `${r.name}: ${r.value}`).join(' | ') || '(no memories)';
    case 'answer':
      return o.answer;
    case 'none':
      return '';
  }
}

/** The LLM simulator's reply next to its answer; absent for the embedded simulator and other actions. */
function simulatorReply(o: Observation, clip: (s: string) => string): { simulatorReply?: string } {
  if (o.kind !== 'answer') return {};
  if (o.simulatorError) return { simulatorReply: `(no reply accepted: ${o.simulatorError}; answered non-committally)` };
  return typeof o.simulatorReply === 'string' ? { simulatorReply: clip(o.simulatorReply) } : {};
}

export function trajectoryView(t: Trajectory, clip: (s: string, n?: number) => string = clipTo): TurnView[] {
  return t.turns.map((turn) => {
    if (turn.env) return { action: turn.env.action, execute: clip(turn.env.execute), plan: clip(turn.env.plan, 200), observation: clip(turn.env.observation) };
    return turn.parsed.ok
      ? {
          action: turn.parsed.turn.action,
          execute: clip(turn.parsed.turn.execute),
          plan: clip(turn.parsed.turn.plan, 200),
          observation: clip(observationText(turn.observation)),
          ...simulatorReply(turn.observation, clip),
        }
      : { action: 'INVALID', execute: clip(turn.completionText), plan: `${turn.parsed.reason}: ${turn.parsed.detail}`, observation: '' };
  });
}
