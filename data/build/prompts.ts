// Every prompt of the LLM build steps, in one readable place (`gsteer data build
// --show-prompts` prints them). Each step answers one JSON object under its schema
// (schemas.ts); the paper's wording of the step is quoted in the system prompt.
import { personaLines } from '../persona.ts';
import type { ChatMessage } from '../../endpoints/index.ts';
import type { BuiltTarget, Candidate, RawInstance } from './types.ts';

const rubricText = (inst: RawInstance) =>
  inst.rubric.map((r, i) => `[${i}] (weight ${r.weight}${r.dimension ? `, ${r.dimension}` : ''}) ${r.criterion}`).join('\n');

const userText = (inst: RawInstance) =>
  [
    `Persona:`,
    ...personaLines(inst.user.persona).map((l) => `- ${l}`),
    `Context and memory snippets:`,
    ...(inst.user.context.length ? inst.user.context.map((c) => `- ${c}`) : ['- (none)']),
  ].join('\n');

const targetsText = (ts: readonly Pick<BuiltTarget, 'id' | 'description' | 'criterion'>[]) =>
  ts.map((t) => `${t.id}: ${t.description}${t.criterion ? ` (rubric: ${t.criterion})` : ''}`).join('\n');

export const SYSTEM = {
  candidates:
    'You extract candidate elicitation targets for personalized deep research: user-dependent information that can alter ' +
    'downstream research planning. Extract them from the user query and its personalization rubric items. Split a rubric ' +
    'item only when it contains separable decisions that can independently change downstream planning; keep aspects that ' +
    'would naturally be resolved together merged. For each candidate give a short description of what must be known about ' +
    'the user, the rubric criterion it comes from, and the 0-based indices of its rubric items. Answer with JSON only.',
  validate:
    'You validate candidate elicitation targets. Keep a candidate only when its answer can vary across users, materially ' +
    'affects downstream research planning, and is not already specified by the query. Drop superficial (presentation only), ' +
    'redundant (covered by another kept candidate), and overly narrow candidates, and candidates no user fact bears on ' +
    '(reason "ungrounded"); a dropped candidate needs its reason, a kept one reason null. Mark a kept target essential when ' +
    'leaving it unresolved would likely omit a major decision branch, apply inappropriate comparison criteria, or produce ' +
    'materially underspecified recommendations. Answer with JSON only.',
  seeds:
    'You write a seed question and answer for each elicitation target: the question a clarifying assistant would ask the ' +
    'user about it, one target per question, and the answer this user would give, in the first person, grounded only in ' +
    'the persona and context given. Never invent facts the persona and context do not support; when they say nothing, ' +
    'answer with an empty string (essential targets must have an answer). Answer with JSON only.',
  ieg:
    'You build an Intent Elicitation Graph over elicitation targets: a directed acyclic graph whose edge (a, b) means that ' +
    'resolving a can change whether or how b should be elicited. Edges capture clarification dependencies, not topical ' +
    'similarity. The query is the implicit root; do not add it. Mark a target late-activatable when it is initially ' +
    'inactive and becomes eligible only after one of its parents has been covered (it needs a parent edge). Answer with JSON only.',
  slots:
    'You canonicalize elicitation targets into slot memories: for each target a slot name (snake_case, 1-3 words, what ' +
    'the slot holds, e.g. "travel_budget", unique within the request) and a purpose (one short phrase: what the value is ' +
    'used for). The slot value is the seed answer. Answer with JSON only.',
  profile:
    "You write an offline profile memory: one sentence summarizing reusable information about this user from the user's " +
    'other requests. Exclude every value belonging to the current request, even paraphrased: the summary must not reveal ' +
    'them. Write an empty string when nothing reusable is left. Answer with JSON only.',
} as const;

export type StepName = keyof typeof SYSTEM;
export const STEP_NAMES = Object.keys(SYSTEM) as StepName[];

const msgs = (step: StepName, user: string): ChatMessage[] => [
  { role: 'system', content: SYSTEM[step] },
  { role: 'user', content: user },
];

export const PROMPTS = {
  candidates: (inst: RawInstance) =>
    msgs('candidates', `Domain: ${inst.task.domain}\nQuery: ${inst.query}\nPersonalization rubric items:\n${rubricText(inst)}`),
  validate: (inst: RawInstance, cands: readonly Candidate[], weights: ReadonlyMap<string, number>) =>
    msgs(
      'validate',
      `Query: ${inst.query}\n${userText(inst)}\nCandidates:\n${cands.map((c) => `${c.id} (weight ${(weights.get(c.id) ?? 0).toFixed(3)}): ${c.description} (rubric: ${c.criterion})`).join('\n')}`,
    ),
  seeds: (inst: RawInstance, targets: readonly BuiltTarget[]) =>
    msgs(
      'seeds',
      `Query: ${inst.query}\n${userText(inst)}\nTargets:\n${targets.map((t) => `${t.id}${t.essential ? ' [essential]' : ''}: ${t.description}`).join('\n')}`,
    ),
  ieg: (inst: RawInstance, targets: readonly BuiltTarget[]) =>
    msgs(
      'ieg',
      `Query: ${inst.query}\nTargets:\n${targets.map((t) => `${t.id}${t.essential ? ' [essential]' : ''} (weight ${t.weight.toFixed(3)}): ${t.description}`).join('\n')}`,
    ),
  slots: (inst: RawInstance, targets: readonly BuiltTarget[]) => msgs('slots', `Query: ${inst.query}\nTargets:\n${targetsText(targets)}`),
  profile: (inst: RawInstance, current: readonly BuiltTarget[], others: readonly { purpose: string; value: string }[]) =>
    msgs(
      'profile',
      `Current request: ${inst.query}\nValues of the current request (exclude them):\n${current.map((t) => `- ${t.seedAnswer}`).join('\n') || '- (none)'}\n` +
        `What the user's other requests established:\n${others.map((o) => `- ${o.purpose}: ${o.value}`).join('\n') || '- (none)'}`,
    ),
};
