// The deep-research agent (DRA) of downstream evaluation (method §12; paper "Downstream Report
// Utility"): it receives one query (the original or a method's refined q*) and writes one
// report. Three implementations of one interface:
//   - `responses`: the OpenAI Responses API (paper: o4-mini-deep-research-2025-06-26 with at
//     most 15 web-search tool calls): `tools: [{type: <tool>}]`, `max_tool_calls`, the report
//     is `output_text`. Sent through endpoints/ (`Endpoint.request`: retry rule, concurrency
//     cap, call records); not request-cached, the stored report is its cache (reports.ts).
//   - `chat`: /v1/chat/completions of any OpenAI-compatible server (a system prompt that asks
//     for a report, then the query), through `Endpoint.chat`, request-cached by hash.
//   - `embedded`: a deterministic STAND-IN, no model and no research: it lays the query out
//     as a report (the request, one finding per clause of the query, one recommendation per
//     clause), so a query that states more of the user's constraints yields a report that
//     addresses more of them, which is the one property downstream scores measure through
//     the query. Numbers from it are not paper numbers, and every output says so.
import { endpointOptions } from '../../configs/endpoints.ts';
import type OpenAI from 'openai';
import type { DownstreamConfig } from '../../configs/downstream.ts';
import { BadReply, createEndpoint, withRequestCache, type CallSink, type Endpoint } from '../../endpoints/index.ts';
import { clauses, sentences } from '../extractor-rule.ts';

export interface ResearchAgent {
  readonly name: string;
  readonly model: string | null;
  readonly standIn: boolean;
  research(query: string): Promise<string>;
}

/** The embedded stand-in's report (deterministic: the same query gives the same report). */
export function standInReport(query: string): string {
  const parts = [...new Set(sentences(query).flatMap(clauses))];
  const title = (sentences(query)[0] ?? query).slice(0, 80);
  return [
    `Report: ${title}`,
    '',
    '## Scope',
    query.trim(),
    '',
    '## Findings',
    ...parts.map((c, i) => `${i + 1}. ${c}: what the sources say about this point (stand-in agent: no research was done).`),
    '',
    '## Recommendations',
    ...parts.map((c) => `- Choose the option that best fits: ${c}.`),
    '',
  ].join('\n');
}

export class StandInAgent implements ResearchAgent {
  readonly model = null;
  readonly standIn = true;
  constructor(readonly name: string) {}
  async research(query: string): Promise<string> {
    return standInReport(query);
  }
}

type AgentConfig = DownstreamConfig['agent'];

function endpointFor(c: AgentConfig, sink: CallSink): Endpoint {
  return createEndpoint(endpointOptions('agent', c), { sink });
}

/** An agent behind an endpoint (chat or Responses API): its name, model and config. */
abstract class EndpointAgent implements ResearchAgent {
  readonly standIn = false;
  readonly model: string;
  constructor(
    readonly name: string,
    protected readonly c: AgentConfig,
    protected readonly ep: Endpoint,
  ) {
    this.model = c.model;
  }
  abstract research(query: string): Promise<string>;
}

/** /v1/chat/completions: a system prompt, then the query; the answer is the report. */
export class ChatAgent extends EndpointAgent {
  async research(query: string): Promise<string> {
    const r = await this.ep.chat({
      messages: [
        { role: 'system', content: this.c.systemPrompt },
        { role: 'user', content: query },
      ],
      ...(this.c.maxOutputTokens !== null ? { maxTokens: this.c.maxOutputTokens } : {}),
    });
    return r.text;
  }
}

/** The OpenAI Responses API (deep-research models): web-search tool, at most maxToolCalls calls. */
export class ResponsesAgent extends EndpointAgent {
  async research(query: string): Promise<string> {
    const body = {
      model: this.c.model,
      input: query,
      ...(this.c.tool ? { tools: [{ type: this.c.tool }], max_tool_calls: this.c.maxToolCalls } : {}),
      ...(this.c.maxOutputTokens !== null ? { max_output_tokens: this.c.maxOutputTokens } : {}),
    };
    return this.ep.request('responses', async (client: OpenAI) => {
      const res = (await client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming)) as OpenAI.Responses.Response;
      const usage = res.usage ? { promptTokens: res.usage.input_tokens ?? 0, completionTokens: res.usage.output_tokens ?? 0 } : null;
      const text = (res.output_text ?? '').trim();
      if (!text) throw new BadReply('empty', `response ${res.status ?? 'without status'} has no output text`, null);
      return { value: text, usage };
    });
  }
}

/** The agent eval.downstream.agent names; `cacheDir` caches chat requests by hash. */
export function agentFrom(c: AgentConfig, o: { sink: CallSink; cacheDir: string }): ResearchAgent {
  switch (c.kind) {
    case 'embedded':
      return new StandInAgent(c.name);
    case 'chat':
      return new ChatAgent(c.name, c, withRequestCache(endpointFor(c, o.sink), o.cacheDir));
    case 'responses':
      return new ResponsesAgent(c.name, c, endpointFor(c, o.sink));
    case 'search':
      throw new Error('internal: the search agent needs the run config (qref.search, qref.filter): build it with searchAgentFrom (agent-search.ts)');
    default: {
      const never: never = c.kind;
      throw new Error(`internal: agent kind ${String(never)}`);
    }
  }
}
