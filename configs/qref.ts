// Config fragment for the QREF environment (issue 23; the QREF paper, method §13), to be mounted as
// `qref:` in configs/schema.ts (`qref: QrefSchema.prefault({})`). Every
// default names its source; "ours" marks a choice the paper does not make.
import { z } from 'zod';
import { chatFields, endpointSection } from './endpoint-section.ts';

const positiveInt = z.number().int().positive();

/**
 * The fewest max_tokens a constrained refiner turn fits in: the shortest turn the refiner
 * grammar allows, byte by byte ("RATIONALE:x\nQUERIES:\n- x", 24), and EOS. The refiner_turn
 * filter computes the same (structured/refiner-filter.ts; a test keeps the two equal).
 */
export const REFINER_MIN_TOKENS = 25;

/**
 * A JSON search API (rollout/qref/http-search.ts). Paths are dotted keys with [n] indices
 * (`hits.hits`, `_source.title`). Serper, as the paper uses it: url https://google.serper.dev/search,
 * method POST, queryParam q, topKParam num, apiKeyEnv SERPER_API_KEY, apiKeyHeader X-API-KEY,
 * apiKeyPrefix "", results organic, id link, title title, text snippet (no score: 1/rank).
 */
export const HttpSearchSchema = z
  .object({
    url: z.string().url(),
    method: z.enum(['GET', 'POST']).default('GET'),
    /** GET: the query-string parameter; POST: the body path that receives the query. */
    queryParam: z.string().min(1).default('q'),
    /** Where the number of results goes (same rules as queryParam); unset = the API's default page. */
    topKParam: z.string().min(1).optional(),
    /** POST: fixed fields of the JSON body, the query and top-k written into a copy. */
    body: z.record(z.string(), z.unknown()).default({}),
    headers: z.record(z.string(), z.string()).default({}),
    /** Environment variable holding the API key (the key never goes in a config, nor in logs). */
    apiKeyEnv: z.string().min(1).optional(),
    apiKeyHeader: z.string().min(1).default('Authorization'),
    apiKeyPrefix: z.string().default('Bearer '),
    /** Response mapping: the array of results, then fields inside one result. */
    results: z.string().min(1).default('results'),
    id: z.string().min(1).default('id'),
    title: z.string().min(1).default('title'),
    text: z.string().min(1).default('text'),
    /** The result's score; unset = 1 / rank (rank from 1), for APIs that return only an order. */
    score: z.string().min(1).optional(),
    timeoutMs: positiveInt.default(10_000), // ours: one slow query must not hold a rollout for long
    /** A reply larger than this many MiB is a failed search (`too_large`), not read further (ours: a result page is kilobytes). */
    maxResponseMb: z.number().positive().default(8),
  })
  .strict();
export type HttpSearchConfig = z.output<typeof HttpSearchSchema>;

/**
 * The LLM evidence filter's endpoint (rollout/qref/filter-llm.ts; method §13): an
 * OpenAI-compatible /v1 server, mapped to endpoints/ options by configs/endpoints.ts like the
 * judge and simulator sections (same fields, role "filter" in the call records and metrics).
 */
export const LlmFilterSchema = endpointSection({
  model: 'Qwen/Qwen3-8B', // paper: "We use Qwen3-8B as the Evidence Filter"
  apiKeyEnv: 'GSTEER_FILTER_API_KEY',
  timeoutMs: 60_000,
  concurrency: 8, // requests in flight per rollout process
  fields: {
    temperature: z.number().min(0).max(2).default(0), // ours: a filter decides, it does not sample (as the judge)
    // ours: {"kept": [...]} of at most topK indices, thinking off, is a few dozen tokens
    maxTokens: positiveInt.default(256),
    // ours: a result's title + text beyond this many code points is cut (Serper snippets are ~160;
    // a local corpus may hold whole passages)
    maxResultChars: positiveInt.default(1000),
    chatTemplateKwargs: chatFields.chatTemplateKwargs,
    responseFormat: chatFields.responseFormat,
  },
});
export type LlmFilterConfig = z.output<typeof LlmFilterSchema>;

export const QrefSchema = z
  .object({
    data: z
      .object({
        corpus: z.string().default('data/qref/demo/corpus.jsonl'),
        questions: z.string().default('data/qref/demo/questions.jsonl'),
        demonstrations: z.string().optional().default('data/qref/demo/demonstrations.jsonl'),
      })
      .strict()
      .prefault({}),
    search: z
      .object({
        /** bm25: the embedded index over data.corpus; http: the API in `http` (paper: Serper). */
        kind: z.enum(['bm25', 'http']).default('bm25'),
        topK: positiveInt.default(10), // Serper's default page: 10 organic results per query (paper's search tool)
        bm25: z
          .object({
            k1: z.number().min(0).default(1.2), // Lucene/Elasticsearch default
            b: z.number().min(0).max(1).default(0.75), // Lucene/Elasticsearch default
            delta: z.number().min(0).default(0), // 0 = plain BM25 (MiniSearch's BM25+ delta)
          })
          .strict()
          .prefault({}),
        http: HttpSearchSchema.optional(),
      })
      .strict()
      .prefault({}),
    /** Bounds of the refiner's turn (structured/qref/turn.ts). Ours: the paper bounds but gives no numbers. */
    turn: z
      .object({
        // WebSailor's batches average 3.8 queries (7,545 queries in 1,992 batches, paper §2); 5 leaves room.
        maxQueries: positiveInt.default(5),
        maxQueryChars: positiveInt.default(200),
        maxRationaleChars: positiveInt.default(400), // "a short rationale"
      })
      .strict()
      .prefault({}),
    /** The retrieval-grounded reward (rollout/qref/reward.ts, formula there and in rollout/qref/README.md). */
    reward: z
      .object({
        // Ours: the paper names the cost of extra queries (GPT-5.2's recall came from issuing
        // more of them) but gives no value; 0.1 = a fifth of one evidence document of a 2-document step.
        queryCost: z.number().min(0).default(0.1),
        invalidPenalty: z.number().min(0).default(1.0), // as G-STEER's invalid-output penalty (method §4)
      })
      .strict()
      .prefault({}),
    /**
     * The evidence filter (method §13). rule: the embedded lexical stand-in (rollout/qref/filter-rule.ts);
     * llm: the paper's filter, an LLM (paper: Qwen3-8B) at `llm` (rollout/qref/filter-llm.ts).
     */
    filter: z
      .object({
        kind: z.enum(['rule', 'llm']).default('rule'),
        // ours: best F1 on the demo train split (rollout/qref/filter-rule.ts, rollout/qref/README.md)
        minCoverage: z.number().min(0).max(1).default(0.45),
        llm: LlmFilterSchema.optional(),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.search.kind === 'http' && !c.search.http)
      ctx.addIssue({
        code: 'custom',
        path: ['search', 'http'],
        message: 'qref.search.kind is "http" but qref.search.http is not set; set qref.search.http.url and its response mapping, or use qref.search.kind=bm25',
      });
    if (c.filter.kind === 'llm' && !c.filter.llm)
      ctx.addIssue({
        code: 'custom',
        path: ['filter', 'llm'],
        message:
          'qref.filter.kind is "llm" but qref.filter.llm is not set; set qref.filter.llm.baseUrl (an OpenAI-compatible /v1 URL serving the filter model, paper: Qwen3-8B), or use qref.filter.kind=rule',
      });
  });
export type QrefConfig = z.output<typeof QrefSchema>;
