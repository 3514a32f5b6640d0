// The refiner's input (the QREF paper, method §13: R_phi takes the original question x, the current
// reasoning trace tau_t and the candidate batch Q_t). One system message with the task and
// the output format, one user message with the three inputs; the SFT examples
// (sft-example.ts) and the rollouts use this same function, so SFT trains on exactly what
// the policy later sees.
import type { ChatMessage } from '../../data/chat-sft-example.ts';
import { QUERIES_HEADER, QUERY_BULLET, RATIONALE_HEADER, type RefinerCaps } from '../../structured/qref/turn.ts';

export interface RefinerInput {
  question: string;
  /** The agent's reasoning before this search; may be empty. */
  trace: string;
  /** The agent's candidate query batch. */
  batch: readonly string[];
}

export function refinerSystemPrompt(caps: RefinerCaps): string {
  return [
    'You refine the search queries of a research agent before they are sent to a search engine.',
    "You see the original question, the agent's reasoning so far and its candidate queries.",
    'Rewrite the batch so that it finds the evidence the reasoning needs next:',
    '- anchor each query on names and facts from the question and the reasoning;',
    '- do not search again for what the reasoning already knows;',
    '- make the queries complementary, not paraphrases of one another;',
    `- use as few queries as the need allows, at most ${caps.maxQueries}, each at most ${caps.maxQueryChars} characters.`,
    'Reply in exactly this format and nothing else:',
    `${RATIONALE_HEADER} <one short line: what was wrong with the batch and what the new one does>`,
    QUERIES_HEADER,
    `${QUERY_BULLET}<query>`,
  ].join('\n');
}

export function refinerUserPrompt(input: RefinerInput): string {
  const trace = input.trace.trim() || '(none yet)';
  return [`Question: ${input.question}`, '', 'Reasoning so far:', trace, '', 'Candidate queries:', ...input.batch.map((q) => `${QUERY_BULLET}${q}`)].join('\n');
}

export function refinerMessages(input: RefinerInput, caps: RefinerCaps): ChatMessage[] {
  return [
    { role: 'system', content: refinerSystemPrompt(caps) },
    { role: 'user', content: refinerUserPrompt(input) },
  ];
}
