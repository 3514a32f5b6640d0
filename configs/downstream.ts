// Config fragment for downstream evaluation (`gsteer eval downstream`, eval/downstream/;
// method §12), mounted as `eval.downstream` in configs/schema.ts. Paper ("Downstream Report
// Utility"): OpenAI Deep Research (o4-mini-deep-research-2025-06-26, Responses API, at most 15
// web-search calls) writes one report per method and test instance; the PDR-Bench evaluator
// (gpt-5.4-2026-03-05) scores P and Q, three rounds averaged. "ours" marks a choice the paper
// does not make. The embedded agent and judge are deterministic stand-ins (eval/downstream/).
import { z } from 'zod';
import { chatFields, endpointSection } from './endpoint-section.ts';

const positiveInt = z.number().int().positive();

export const DownstreamAgentSchema = endpointSection({
  /**
   * embedded: deterministic stand-in; responses: OpenAI Responses API (deep research); chat:
   * /v1/chat/completions; search: the search agent (rollout/agent/: an LLM backbone at baseUrl
   * that searches through qref.search, filters with qref.filter and reads pages with `reader`,
   * within maxSearches / maxReads; PDR-Bench's second deep-research agent).
   */
  kinds: ['embedded', 'responses', 'chat', 'search'],
  urlHint: 'an OpenAI-compatible /v1 URL (https://api.openai.com/v1)',
  model: 'o4-mini-deep-research-2025-06-26', // paper
  // ours: a deep-research run takes minutes; 4 requests in flight
  apiKeyEnv: 'GSTEER_AGENT_API_KEY',
  timeoutMs: 1_800_000,
  concurrency: 4,
  fields: {
    /** The agent's name: the row group of Tables 4 and 8, and the folder of its reports. */
    name: z.string().min(1).default('OpenAI DR'),
    /** responses: the web-search tool and `max_tool_calls` (paper: 15); null = no tool. */
    tool: z.string().min(1).nullable().default('web_search_preview'),
    maxToolCalls: positiveInt.default(15), // paper: at most 15 web-search tool calls
    /** Cap on the report's tokens (responses: max_output_tokens; chat: max_tokens); null = the server's. */
    maxOutputTokens: positiveInt.nullable().default(null),
    /** search: step limits (PDR-Bench's second agent: at most 8 searches and 8 page reads); maxSteps bounds every decision. */
    maxSearches: positiveInt.default(8),
    maxReads: z.number().int().min(0).default(8),
    maxSteps: positiveInt.default(20), // ours: 8 + 8 and room for the answer and an over-limit step or two
    /** search: the backbone's sampling temperature; null = the server's default. */
    temperature: z.number().min(0).max(2).nullable().default(null),
    /** search: a search result's or a read page's text beyond this many code points is cut in what the backbone sees (ours). */
    maxObservationChars: positiveInt.default(2000),
    /** search: the visit tool. corpus: the qref.data.corpus document by id (with the embedded BM25 backend); http: GET prefix + URL (paper: Jina Reader, prefix https://r.jina.ai/). */
    reader: z
      .object({
        kind: z.enum(['corpus', 'http']).default('corpus'),
        prefix: z.string().url().optional(),
        timeoutMs: positiveInt.default(30_000),
        /** A page larger than this many MiB is a failed read, an observation for the agent (ours). */
        maxResponseMb: z.number().positive().default(8),
        apiKeyEnv: z.string().min(1).optional(),
        apiKeyHeader: z.string().min(1).default('Authorization'),
        apiKeyPrefix: z.string().default('Bearer '),
      })
      .strict()
      .prefault({}),
    /** chat: system prompt before the query (a plain chat model is no research agent; say what it should write). */
    systemPrompt: z.string().default('You are a deep research agent. Research the request and write a complete, well-structured report for the user.'),
  },
});

export const DownstreamJudgeSchema = endpointSection({
  /**
   * PDR-Bench's PQR protocol (eval/downstream/pqr.ts): llm: dimension weights and criteria generated per
   * task (and persona for P), a separate scorer per round, hierarchical averaging, each step one
   * /v1/chat/completions call under a JSON schema; embedded: a deterministic stand-in with the same steps.
   */
  kinds: ['embedded', 'llm'],
  model: 'gpt-5.4-2026-03-05', // paper
  apiKeyEnv: 'GSTEER_DOWNSTREAM_JUDGE_API_KEY',
  timeoutMs: 300_000,
  concurrency: 4, // ours
  fields: {
    rounds: positiveInt.default(3), // paper: three scoring rounds per report and metric, averaged (the criteria are generated once per instance)
    /** Sampling temperature of each round; null = the server's default (OpenAI reasoning models accept no other). */
    temperature: z.number().min(0).max(2).nullable().default(null),
    maxTokens: positiveInt.nullable().default(null),
    responseFormat: chatFields.responseFormat,
  },
});

export const DownstreamSchema = z
  .object({
    agent: DownstreamAgentSchema.prefault({}),
    judge: DownstreamJudgeSchema.prefault({}),
    /** Send the unrefined query too (Tables 4 / 8's "Original Query" row). */
    original: z.boolean().default(true),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.agent.kind === 'search' && c.agent.reader.kind === 'http' && !c.agent.reader.prefix)
      ctx.addIssue({
        code: 'custom',
        path: ['agent', 'reader', 'prefix'],
        message:
          'eval.downstream.agent.reader.kind is "http" but eval.downstream.agent.reader.prefix is not set; set it to the reader URL prefix (Jina Reader: https://r.jina.ai/) or use reader.kind=corpus',
      });
  });

export type DownstreamConfig = z.output<typeof DownstreamSchema>;
