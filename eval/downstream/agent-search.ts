// The search agent as the downstream deep-research agent (eval.downstream.agent.kind `search`;
// method §12; PDR-Bench's second agent, "an agent that searches and reads within 8/8 step
// limits"): the query goes to the agent loop (rollout/agent/loop.ts) with an LLM backbone
// (role `agent`), the configured search backend (qref.search: the embedded BM25 over
// qref.data.corpus or an HTTP API), the configured evidence filter (qref.filter) and a reader;
// its final answer is the report. Every LLM call goes through endpoints/ and every search and
// page read is recorded in the same sink (rollout/agent/recorded-tools.ts); each run's steps
// go to `onRun` (the command writes them to agent_runs.jsonl). A run that ends without an
// answer (the backbone's replies refused through every retry) throws, as the Responses-API
// agent's failed call does: no report is stored, a rerun asks again.
import type { RunConfig } from '../../configs/schema.ts';
import { createEndpoint, type CallSink } from '../../endpoints/index.ts';
import { endpointOptions } from '../../configs/endpoints.ts';
import { LlmBackbone } from '../../rollout/agent/backbone-llm.ts';
import { runAgent, type AgentDeps } from '../../rollout/agent/loop.ts';
import { CorpusReader, HttpReader } from '../../rollout/agent/reader.ts';
import { recordedReader, recordedSearch } from '../../rollout/agent/recorded-tools.ts';
import type { AgentLimits, AgentRun } from '../../rollout/agent/types.ts';
import { filterFrom, loadQrefData, searchFrom } from '../../rollout/qref/env.ts';
import type { ResearchAgent } from './agent.ts';

export class SearchResearchAgent implements ResearchAgent {
  readonly standIn = false;
  constructor(
    readonly name: string,
    readonly model: string,
    private readonly deps: AgentDeps,
    private readonly limits: AgentLimits,
    private readonly onRun: (run: AgentRun) => void = () => {},
  ) {}

  async research(query: string): Promise<string> {
    const run = await runAgent(this.deps, query, '', this.limits);
    this.onRun(run);
    if (run.answer === null)
      throw new Error(
        `search agent ${this.name}: no answer to "${query.slice(0, 80)}" (${run.end}: ${run.steps.at(-1)?.observation ?? 'no step'}); rerun to ask again`,
      );
    return run.answer;
  }
}

/** The agent of eval.downstream.agent (kind search) with the run config's search backend and filter. */
export async function searchAgentFrom(cfg: RunConfig, sink: CallSink, onRun?: (run: AgentRun) => void): Promise<SearchResearchAgent> {
  const c = cfg.eval.downstream.agent;
  const corpus = cfg.qref.search.kind === 'bm25' || c.reader.kind === 'corpus' ? loadQrefData(cfg).corpus : [];
  const search = recordedSearch(await searchFrom(cfg.qref, corpus), sink);
  const reader = recordedReader(
    c.reader.kind === 'http'
      ? new HttpReader({
          prefix: c.reader.prefix!,
          timeoutMs: c.reader.timeoutMs,
          maxResponseMb: c.reader.maxResponseMb,
          apiKeyHeader: c.reader.apiKeyHeader,
          apiKeyPrefix: c.reader.apiKeyPrefix,
          ...(c.reader.apiKeyEnv ? { apiKeyEnv: c.reader.apiKeyEnv } : {}),
        })
      : new CorpusReader(corpus),
    sink,
  );
  const endpoint = createEndpoint(endpointOptions('agent', { ...c, responseFormat: 'json_schema' }), { sink });
  const backbone = new LlmBackbone({ endpoint, maxQueries: cfg.qref.turn.maxQueries, temperature: c.temperature, maxTokens: c.maxOutputTokens });
  const limits: AgentLimits = {
    maxSteps: c.maxSteps,
    maxSearches: c.maxSearches,
    maxReads: c.maxReads,
    topK: cfg.qref.search.topK,
    maxObservationChars: c.maxObservationChars,
  };
  return new SearchResearchAgent(c.name, c.model, { backbone, search, filter: await filterFrom(cfg.qref, sink), refiner: null, reader }, limits, onRun);
}
