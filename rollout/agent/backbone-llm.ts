// The backbone agent pi_theta as an LLM (the QREF paper, method §13.5: a ReAct-style loop that
// "alternates between reasoning, tool use, and answer generation"; PDR-Bench's second
// deep-research agent) through the endpoints/ layer (retry rule, concurrency cap, call records
// under role `agent`). Each step is one chat call: the system prompt names the three actions
// and the reply format, the user message holds the question, the reasoning the run starts
// from, every earlier step (thought, action, observation) and what is left; the reply is one
// JSON object under a schema, `{"thought", "action": "search"|"visit"|"answer", "queries" |
// "url" | "answer"}`, checked with the action's field present (and only `answer` on a step
// that must answer), the error fed back on a refused reply. A reply refused on every attempt,
// or a server down through every retry, is a failed decision (the run ends); a 4xx the server
// answers is the endpoint layer's InputError (a configuration fault).
import { z } from 'zod';
import { ReplyError, type ChatMessage, type Endpoint } from '../../endpoints/index.ts';
import { TransientError } from '../../util/errors.ts';
import type { AgentStep, AgentView, Backbone, BackboneAction, BackboneDecision } from './types.ts';

export function backboneSystemPrompt(maxQueries: number): string {
  return [
    'You are a research agent. You answer a question by searching and reading, one step at a time.',
    'At each step, think about what you know and what is still missing, then choose one action.',
    'Reply with one JSON object and nothing else, in one of these forms:',
    `{"thought": "<your reasoning so far>", "action": "search", "queries": ["<query>", ...]}  (1 to ${maxQueries} search engine queries)`,
    '{"thought": "<your reasoning so far>", "action": "visit", "url": "<the id or URL of a result to read in full>"}',
    '{"thought": "<your reasoning so far>", "action": "answer", "answer": "<your final answer>"}',
    'Answer as soon as the evidence suffices; searches and reads are limited.',
  ].join('\n');
}

const actionLine = (s: AgentStep) => {
  if (s.search) return `search: ${JSON.stringify(s.search.original)}`;
  if (s.visit) return `visit: ${s.visit.url}`;
  return s.action;
};

export function backboneUserPrompt(view: AgentView): string {
  const history = view.steps.flatMap((s) => [`Step ${s.index + 1}`, `Thought: ${s.thought}`, `Action: ${actionLine(s)}`, `Observation:\n${s.observation}`, '']);
  const left = `Left: ${view.left.steps} step(s), ${view.left.searches} search(es), ${view.left.reads} read(s).`;
  return [
    `Question: ${view.question}`,
    '',
    ...(view.trace.trim() ? ['Reasoning so far:', view.trace.trim(), ''] : []),
    ...history,
    view.mustAnswer ? `${left} This step accepts only the answer action: answer now with what you have.` : left,
  ].join('\n');
}

/** The reply schema: the action's own field must be there; `mustAnswer` accepts only an answer. */
export function backboneReplySchema(maxQueries: number, mustAnswer: boolean) {
  const query = z.string().regex(/\S/, 'a query must contain a non-space character');
  return z
    .object({
      thought: z.string(),
      action: mustAnswer ? z.enum(['answer']) : z.enum(['search', 'visit', 'answer']),
      queries: z.array(query).min(1).max(maxQueries).optional(),
      url: z.string().min(1).optional(),
      answer: z.string().optional(),
    })
    .strict()
    .superRefine((r, ctx) => {
      const need = { search: 'queries', visit: 'url', answer: 'answer' } as const;
      const field = need[r.action];
      if (r[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `action "${r.action}" needs the field "${field}"` });
    });
}

export interface LlmBackboneOptions {
  endpoint: Endpoint;
  maxQueries: number;
  temperature: number | null;
  maxTokens: number | null;
}

export class LlmBackbone implements Backbone {
  readonly name = 'llm';
  constructor(private readonly o: LlmBackboneOptions) {}

  async next(view: AgentView): Promise<BackboneDecision> {
    const messages: ChatMessage[] = [
      { role: 'system', content: backboneSystemPrompt(this.o.maxQueries) },
      { role: 'user', content: backboneUserPrompt(view) },
    ];
    const req = {
      messages,
      ...(this.o.temperature === null ? {} : { temperature: this.o.temperature }),
      ...(this.o.maxTokens === null ? {} : { maxTokens: this.o.maxTokens }),
    };
    try {
      const r = (await this.o.endpoint.chatJson(req, { name: 'agent_step', schema: backboneReplySchema(this.o.maxQueries, view.mustAnswer), feedback: true }))
        .value;
      const action = r.action as BackboneAction['action'];
      const decision: BackboneAction =
        action === 'search'
          ? { action: 'search', thought: r.thought, queries: r.queries! }
          : action === 'visit'
            ? { action: 'visit', thought: r.thought, url: r.url! }
            : { action: 'answer', thought: r.thought, answer: r.answer! };
      return { ok: true, decision };
    } catch (e) {
      if (e instanceof ReplyError || e instanceof TransientError) return { ok: false, reason: 'failed_call', detail: e.message };
      throw e; // InputError (the server rejected the request) and bugs
    }
  }
}
