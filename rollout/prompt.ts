// The policy's input each turn (method §3.1): query q, profile p_u, the current evidence
// state Sigma_t (the one the policy last wrote; empty at turn 1) and the history of
// actions with their observations. Every turn is one fresh prompt [system, user], so each
// policy call is scored on its own (prompt ids, completion ids); targets and the IEG are
// never shown (method §2). The system prompt is sent every turn, so it stays short.
import type { Instance } from '../data/schema.ts';
import type { ChatMessage } from '../core/tokenizer.ts';
import { renderSlot } from '../structured/turn/grammar.ts';
import type { ActionKind, EvidenceSlot, Observation } from '../core/types.ts';

export interface HistoryEntry {
  action: ActionKind;
  execute: string;
  observation: Observation;
}

export interface PolicyInput {
  query: string;
  profile: string;
  state: EvidenceSlot[];
  history: HistoryEntry[];
  turn: number; // 1-based
  maxTurns: number;
  /**
   * Baselines only (method §8, eval/baselines.ts): the action menu of a generic prompting
   * agent. Absent = the G-STEER prompt (SYSTEM_PROMPT) with all three actions.
   */
  actions?: readonly ActionKind[];
}

export const SYSTEM_PROMPT = `You turn a user's research request into a personalized research specification for a deep-research agent.
Each turn, keep an evidence state of slots for user-specific factors that would change the research, then choose one action:
RETRIEVE: search the user's memory (EXECUTE = a short memory query).
ASK: ask the user one clarification question (EXECUTE = exactly one question).
STOP: finish (EXECUTE = the refined query, one line, including every covered slot value).
Answer in exactly this format and nothing else:
STATE:
- <name> | purpose: <why it matters> | status: <uncovered|partial|covered> | source: <profile|memory|dialogue> | value: <what is known, empty if uncovered>
PLAN: <one line: what changed and why the next action>
ACTION: <RETRIEVE|ASK|STOP>
EXECUTE: <one line>
Check memory before asking; ask one thing at a time; do not ask what is already known; stop when the important slots are covered.`;

// method §8 baselines share the environment and the output format and differ by action menu
// and prompt: no slot tracking (STATE stays empty), only the menu's actions are described.
const ACTION_HELP: Record<ActionKind, string> = {
  RETRIEVE: "RETRIEVE: search the user's memory (EXECUTE = a short memory query).",
  ASK: 'ASK: ask the user one clarification question (EXECUTE = exactly one question).',
  STOP: 'STOP: finish (EXECUTE = the refined query, one line, with the user-specific details you know).',
};

/** The system prompt of a prompting baseline restricted to `actions` (in RETRIEVE, ASK, STOP order). */
export function baselineSystemPrompt(actions: readonly ActionKind[]): string {
  const menu = (['RETRIEVE', 'ASK', 'STOP'] as const).filter((a) => actions.includes(a));
  const lines = [
    "You turn a user's research request into a personalized research query for a deep-research agent.",
    menu.length === 1 ? 'Your only action is:' : 'Each turn, choose one action:',
    ...menu.map((a) => ACTION_HELP[a]),
    'Answer in exactly this format and nothing else:',
    'STATE:',
    'PLAN: <one line: why this action>',
    `ACTION: <${menu.join('|')}>`,
    'EXECUTE: <one line>',
    `Leave STATE empty; ${menu.length === 1 ? 'rewrite the request now from the query and the profile.' : 'stop when you know enough to personalize the query.'}`,
  ];
  return lines.join('\n');
}

/** The profile the policy sees: the instance's static profile, then what online updates learned (method §6). */
export function policyProfile(instance: Pick<Instance, 'profile'>, storeProfile: string): string {
  const parts = [instance.profile.trim(), storeProfile.trim()].filter(Boolean);
  return parts.length === 2 && parts[0] === parts[1] ? (parts[0] as string) : parts.join(' ');
}

function renderObservation(o: Observation): string[] {
  switch (o.kind) {
    case 'memory':
      if (o.results.length === 0) return ['  MEMORY: no results'];
      return o.results.map((r) => `  MEMORY: ${r.name} (${r.purpose}): ${r.value}`);
    case 'answer':
      return [`  USER: ${o.answer}`];
    case 'none':
      return [];
    default: {
      const never: never = o;
      throw new Error(`internal: unknown observation ${JSON.stringify(never)}`);
    }
  }
}

/** The user message: everything the policy may see this turn. */
export function renderPolicyInput(input: PolicyInput): string {
  const lines = [
    `QUERY: ${input.query}`,
    `PROFILE: ${input.profile.trim() || '(none)'}`,
    `TURN: ${input.turn} of ${input.maxTurns}`,
    'STATE:',
    ...(input.state.length ? input.state.map(renderSlot) : ['(no slots yet)']),
    'HISTORY:',
  ];
  if (input.history.length === 0) lines.push('(nothing yet)');
  input.history.forEach((h, i) => {
    lines.push(`[${i + 1}] ${h.action}: ${h.execute}`, ...renderObservation(h.observation));
  });
  if (input.turn >= input.maxTurns) lines.push('This is the last turn: STOP now.');
  return lines.join('\n');
}

export function buildPolicyMessages(input: PolicyInput): ChatMessage[] {
  return [
    { role: 'system', content: input.actions ? baselineSystemPrompt(input.actions) : SYSTEM_PROMPT },
    { role: 'user', content: renderPolicyInput(input) },
  ];
}
