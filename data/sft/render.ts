// method §7: "Plan summarizes state changes and explains the next action. Execute produces a
// retrieval query, clarification question, or refined query". With an LLM teacher the Plan
// of every turn and the Execute of Retrieve / Ask are written by the teacher from the
// scenario (what changed, the action the scaffold chose and the targets it acts on); the
// refined query at Stop stays `Teacher.refine`. The embedded default is the template
// (plan.ts; Retrieve = the targets' purposes, Ask = the seed question), which is also the
// draft the teacher is shown. A reply that breaks the rules below is refused and retried
// with the error fed back (endpoints/ chatJson with feedback).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { EvidenceSlot } from '../../core/types.ts';
import type { Endpoint } from '../../endpoints/index.ts';

export interface TurnRenderInput {
  action: 'RETRIEVE' | 'ASK' | 'STOP';
  query: string;
  profile: string;
  state: readonly EvidenceSlot[];
  /** The slots this turn acts on (Retrieve: the ones memory is checked for; Ask: the one asked). */
  slots: readonly { name: string; purpose: string; seedQuestion: string }[];
  /** The template's Plan and Execute (the embedded default). */
  draft: { plan: string; execute: string };
}

export interface RenderedTurn {
  plan: string;
  execute: string;
}

const line = (what: string) =>
  z
    .string()
    .regex(/\S/, `${what} must not be blank`)
    .max(600, `${what} must be at most 600 characters`)
    .refine((s) => !/[\r\n]/.test(s), `${what} must be one line (no line breaks)`);

/** The rendered turn: one-line Plan, one-line Execute (ignored at Stop); an Ask asks one question. */
export function renderSchema(action: TurnRenderInput['action']) {
  return z.object({ plan: line('plan'), execute: action === 'STOP' ? z.string() : line('execute') }).superRefine((v, ctx) => {
    if (action === 'ASK' && (v.execute.match(/\?/g) ?? []).length > 1)
      ctx.addIssue({ code: 'custom', path: ['execute'], message: 'an Ask addresses one target: write one question' });
  });
}

const SYSTEM =
  'You write one turn of a clarification agent that refines a research request for a deep-research agent. ' +
  'The action is already chosen. Write PLAN: one sentence that summarizes what changed in the evidence state and ' +
  "explains why the chosen action comes next. Write EXECUTE: for RETRIEVE a natural search query over the user's " +
  'memory for the listed slots; for ASK one short, natural clarification question to the user about the one listed ' +
  'slot; for STOP leave it empty. Use the slot names as given. Do not invent user facts. Answer with JSON only: ' +
  '{"plan": "...", "execute": "..."}.';

export function renderMessages(i: TurnRenderInput): { role: 'system' | 'user'; content: string }[] {
  const state = i.state.length
    ? i.state.map((s) => `- ${s.name} (${s.purpose}): ${s.status}${s.value ? `, value: ${s.value}` : ''}, source: ${s.source}`).join('\n')
    : '(no slots)';
  const slots = i.slots.length
    ? i.slots.map((s) => `- ${s.name}: ${s.purpose}${i.action === 'ASK' ? ` (e.g. "${s.seedQuestion}")` : ''}`).join('\n')
    : '(none)';
  return [
    { role: 'system', content: SYSTEM },
    {
      role: 'user',
      content: `Request: ${i.query}\nProfile: ${i.profile || '(empty)'}\nEvidence state:\n${state}\nAction: ${i.action}\nSlots it acts on:\n${slots}\nTemplate draft: PLAN: ${i.draft.plan} | EXECUTE: ${i.draft.execute || '(none)'}`,
    },
  ];
}

/**
 * The teacher's turn renderer over an endpoint (role "teacher"). Trajectories of one
 * instance share their first turns (same state, same action), so identical prompts are
 * asked once per process: answers are kept by the sha256 of the messages (temperature 0).
 */
export function llmTurnRenderer(ep: Endpoint, maxTokens: number): (i: TurnRenderInput) => Promise<RenderedTurn> {
  const seen = new Map<string, Promise<RenderedTurn>>();
  return (i) => {
    const messages = renderMessages(i);
    const key = createHash('sha256').update(JSON.stringify(messages)).digest('hex');
    let answer = seen.get(key);
    if (!answer) {
      answer = ep
        .chatJson({ messages, temperature: 0, maxTokens }, { name: 'gsteer_sft_turn', schema: renderSchema(i.action), feedback: true })
        .then((r) => ({ plan: r.value.plan.trim(), execute: i.action === 'STOP' ? '' : r.value.execute.trim() }));
      answer.catch(() => seen.delete(key)); // a failed call is not remembered
      seen.set(key, answer);
    }
    return answer;
  };
}
