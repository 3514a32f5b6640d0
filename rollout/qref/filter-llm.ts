// The LLM evidence filter F_psi (method §13; the QREF paper: "The Evidence Filter F_psi
// evaluates each result list conditioned on x, tau_t, and the active refined query q~_t,j, and
// predicts a kept-index set I_t,j"; the paper uses Qwen3-8B) through the endpoints/ layer, as
// the LLM judge (rollout/judge-llm.ts). One call per refined query's result list:
//   messages  system: the task and the reply format; user: question, reasoning trace, query and
//             the numbered results [0] .. [n-1] (title + text, each cut at maxResultChars)
//   reply     {"kept": [k, ...]} asked for under response_format json_schema, each index an
//             integer with minimum 0 and maximum n-1 (the bounds are JSON-schema metadata only:
//             the zod validation checks the shape, so an out-of-range or repeated index reaches
//             checkKept and is a `bad_indices` decision, not a retried schema failure)
// A reply the endpoint layer refuses on every attempt (cut at max_tokens, inside <think>, not
// JSON, not {"kept": [integers]}) or a server that stays down / rate-limits through every
// retry is a `failed_call` decision, never an exception; a request the server rejects (4xx:
// wrong model, key or URL) is an InputError, a configuration fault every call would hit.
import { z } from 'zod';
import { createEndpoint, ReplyError, type CallSink, type ChatMessage, type Endpoint } from '../../endpoints/index.ts';
import { endpointOptions } from '../../configs/endpoints.ts';
import type { LlmFilterConfig } from '../../configs/qref.ts';
import { TransientError } from '../../util/errors.ts';
import { checkKept, type EvidenceFilter, type FilterDecision, type FilterInput } from './evidence-filter.ts';

export const FILTER_SYSTEM_PROMPT = `You filter web search results for a research agent before it reads them.
You see the original question, the agent's reasoning so far, the search query that was just run, and its numbered results (title and text).
Keep a result only if it is useful for answering the question from where the reasoning stands: it states, or leads directly to, a fact the reasoning still needs.
Drop results that are off topic, that only share words with the query, or that repeat what the reasoning has already established.
Keeping nothing is a valid answer when no result helps.
Reply with one JSON object and nothing else: {"kept": [<result numbers>]}, using the numbers shown in brackets, each at most once.`;

/** `s` cut to at most `max` code points, "…" marking a cut. */
export function clip(s: string, max: number): string {
  const cps = [...s];
  return cps.length <= max ? s : `${cps.slice(0, Math.max(0, max - 1)).join('')}…`;
}

export function filterUserPrompt(input: FilterInput, maxResultChars: number): string {
  const trace = input.trace.trim() || '(none yet)';
  const results = input.results.map((r, k) => `[${k}] ${clip(`${r.title}\n${r.text}`.trim(), maxResultChars)}`);
  return [
    `Question: ${input.question}`,
    '',
    'Reasoning so far:',
    trace,
    '',
    `Search query: ${input.query}`,
    '',
    `Results (${input.results.length}):`,
    ...results,
  ].join('\n');
}

export function filterMessages(input: FilterInput, maxResultChars: number): ChatMessage[] {
  return [
    { role: 'system', content: FILTER_SYSTEM_PROMPT },
    { role: 'user', content: filterUserPrompt(input, maxResultChars) },
  ];
}

/** The reply's schema for n >= 1 results: {"kept": [integer]}, no other key; bounds [0, n-1] sent, checked by checkKept. */
export function keptReplySchema(n: number) {
  const index = z
    .number()
    .int()
    .meta({ minimum: 0, maximum: n - 1 });
  return z.object({ kept: z.array(index) }).strict();
}

export interface LlmEvidenceFilterConfig {
  /** The filter endpoint (role "filter"). */
  endpoint: Endpoint;
  temperature: number;
  maxTokens: number;
  maxResultChars: number;
}

export class LlmEvidenceFilter implements EvidenceFilter {
  readonly name = 'llm';
  constructor(private readonly cfg: LlmEvidenceFilterConfig) {}

  async filter(input: FilterInput): Promise<FilterDecision> {
    const n = input.results.length;
    if (n === 0) return { ok: true, kept: [] }; // nothing to judge: no call
    const req = { messages: filterMessages(input, this.cfg.maxResultChars), temperature: this.cfg.temperature, maxTokens: this.cfg.maxTokens };
    let kept: number[];
    try {
      kept = (await this.cfg.endpoint.chatJson(req, { name: 'evidence_filter', schema: keptReplySchema(n) })).value.kept;
    } catch (e) {
      if (e instanceof ReplyError || e instanceof TransientError) return { ok: false, reason: 'failed_call', detail: e.message };
      throw e; // InputError (the server rejected the request) and bugs
    }
    return checkKept(kept, n);
  }
}

/** The filter of `qref.filter.llm` (configs/qref.ts), its calls recorded under role "filter". */
export function llmFilterFrom(c: LlmFilterConfig, sink?: CallSink): LlmEvidenceFilter {
  const endpoint = createEndpoint(endpointOptions('filter', c), sink ? { sink } : {});
  return new LlmEvidenceFilter({ endpoint, temperature: c.temperature, maxTokens: c.maxTokens, maxResultChars: c.maxResultChars });
}
