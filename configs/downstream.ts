// Config fragment for downstream evaluation (`gsteer eval downstream`, eval/downstream/;
// method §12), mounted as `eval.downstream` in configs/schema.ts. Paper ("Downstream Report
// Utility"): OpenAI Deep Research (o4-mini-deep-research-2025-06-26, Responses API, at most 15
// web-search calls) writes one report per method and test instance; the PDR-Bench evaluator
// (gpt-5.4-2026-03-05) scores P and Q, three rounds averaged. "ours" marks a choice the paper
// does not make. The embedded agent and judge are deterministic stand-ins (eval/downstream/).
import { z } from 'zod';

const positiveInt = z.number().int().positive();
const url = z.string().url();

/** One OpenAI-compatible endpoint (endpoints/createEndpoint options). */
const endpointFields = {
  baseUrl: url.optional(),
  apiKeyEnv: z.string().min(1),
  timeoutMs: positiveInt,
  maxRetries: z.number().int().min(0).default(3),
  concurrency: positiveInt.default(4), // requests in flight (ours)
};

export const DownstreamAgentSchema = z
  .object({
    /** embedded: deterministic stand-in; responses: OpenAI Responses API (deep research); chat: /v1/chat/completions. */
    kind: z.enum(['embedded', 'responses', 'chat']).default('embedded'),
    /** The agent's name: the row group of Tables 4 and 8, and the folder of its reports. */
    name: z.string().min(1).default('OpenAI DR'),
    model: z.string().min(1).default('o4-mini-deep-research-2025-06-26'), // paper
    ...endpointFields,
    apiKeyEnv: z.string().min(1).default('GSTEER_AGENT_API_KEY'),
    timeoutMs: positiveInt.default(1_800_000), // ours: a deep-research run takes minutes
    /** responses: the web-search tool and `max_tool_calls` (paper: 15); null = no tool. */
    tool: z.string().min(1).nullable().default('web_search_preview'),
    maxToolCalls: positiveInt.default(15), // paper: at most 15 web-search tool calls
    /** Cap on the report's tokens (responses: max_output_tokens; chat: max_tokens); null = the server's. */
    maxOutputTokens: positiveInt.nullable().default(null),
    /** chat: system prompt before the query (a plain chat model is no research agent; say what it should write). */
    systemPrompt: z.string().default('You are a deep research agent. Research the request and write a complete, well-structured report for the user.'),
  })
  .strict();

export const DownstreamJudgeSchema = z
  .object({
    /**
     * PDR-Bench's PQR protocol (eval/downstream/pqr.ts): llm: dimension weights and criteria generated per
     * task (and persona for P), a separate scorer per round, hierarchical averaging, each step one
     * /v1/chat/completions call under a JSON schema; embedded: a deterministic stand-in with the same steps.
     */
    kind: z.enum(['embedded', 'llm']).default('embedded'),
    model: z.string().min(1).default('gpt-5.4-2026-03-05'), // paper
    ...endpointFields,
    apiKeyEnv: z.string().min(1).default('GSTEER_DOWNSTREAM_JUDGE_API_KEY'),
    timeoutMs: positiveInt.default(300_000),
    rounds: positiveInt.default(3), // paper: three scoring rounds per report and metric, averaged (the criteria are generated once per instance)
    /** Sampling temperature of each round; null = the server's default (OpenAI reasoning models accept no other). */
    temperature: z.number().min(0).max(2).nullable().default(null),
    maxTokens: positiveInt.nullable().default(null),
    responseFormat: z.enum(['json_schema', 'json_object', 'none']).default('json_schema'),
  })
  .strict();

export const DownstreamSchema = z
  .object({
    agent: DownstreamAgentSchema.default(DownstreamAgentSchema.parse({})),
    judge: DownstreamJudgeSchema.default(DownstreamJudgeSchema.parse({})),
    /** Send the unrefined query too (Tables 4 / 8's "Original Query" row). */
    original: z.boolean().default(true),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.agent.kind !== 'embedded' && !c.agent.baseUrl)
      ctx.addIssue({ code: 'custom', path: ['agent', 'baseUrl'], message: `eval.downstream.agent.kind is "${c.agent.kind}" but eval.downstream.agent.baseUrl is not set; set it to an OpenAI-compatible /v1 URL (https://api.openai.com/v1) or use kind=embedded` });
    if (c.judge.kind === 'llm' && !c.judge.baseUrl)
      ctx.addIssue({ code: 'custom', path: ['judge', 'baseUrl'], message: 'eval.downstream.judge.kind is "llm" but eval.downstream.judge.baseUrl is not set; set it to an OpenAI-compatible /v1 URL or use kind=embedded' });
  });

export type DownstreamConfig = z.output<typeof DownstreamSchema>;
