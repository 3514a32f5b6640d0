// The policy client (method §9): one sampled completion for a prompt given as token ids, with
// the sampled ids and their logprobs, from an OpenAI-compatible server speaking vLLM's
// /v1/completions protocol (vLLM, or `gsteer serve`). The trainer scores exactly these ids,
// so ids come from the server (`token_ids`, else `token_id:N` strings in logprobs.tokens),
// never from re-tokenizing `text`; the server's `prompt_token_ids`, when present, must equal
// ours.
import type OpenAI from 'openai';
import { createEndpoint, endpointUrl, type CallSink, type Endpoint } from '../endpoints/index.ts';
import { InputError } from '../util/errors.ts';
import type { TokenFilterKind } from '../structured/constraint-spec.ts';

export interface CompletionRequest {
  promptIds: number[];
  maxTokens: number;
  temperature: number;
  topP: number;
  seed?: number;
  model: string;
  /**
   * Sample under this grammar (vLLM's `structured_outputs.grammar`), plus gsteer serve's
   * token filter when named (`gsteer_token_filter`; vLLM ignores the field).
   */
  constraint?: { grammar: string; tokenFilter?: TokenFilterKind };
}

/** What the server says it constrained the choice with (gsteer serve's `gsteer_structured_outputs`). */
export interface AppliedConstraint {
  specSha256: string;
  tokenFilter: string | null;
  tokenFilterVersion: number | null;
  maxTokens: number;
}

export interface CompletionResult {
  /** Sampled ids, including the terminating EOS id when finishReason is 'stop'. */
  completionIds: number[];
  /** Server logprob of each sampled id (same length as completionIds). */
  logprobs: number[];
  text: string;
  /** 'abort': a grammar left no allowed token (gsteer serve's stop_reason "grammar_dead_end"). */
  finishReason: 'stop' | 'length' | 'abort';
  /** Absent when the server does not report it (vLLM), or nothing was constrained. */
  applied?: AppliedConstraint;
  /** Prompt tokens the server took from its prefix cache (usage.prompt_tokens_details.cached_tokens), when it says. */
  cachedPromptTokens?: number;
}

export interface PolicyClient {
  complete(req: CompletionRequest): Promise<CompletionResult>;
}

/** A policy server by URL (tools and tests; runs build theirs from the config, rollout/from-config.ts). */
export interface PolicyClientConfig {
  baseUrl: string;
  apiKeyEnv?: string;
  timeoutMs: number;
  maxRetries: number;
  /** First retry backoff (ms); doubles per retry. */
  retryBaseMs?: number;
  concurrency?: number;
}

export function policyEndpoint(c: PolicyClientConfig, sink?: CallSink): Endpoint {
  return createEndpoint(
    {
      role: 'policy',
      baseUrl: c.baseUrl,
      model: 'policy',
      apiKeyEnv: c.apiKeyEnv,
      timeoutMs: c.timeoutMs,
      maxRetries: c.maxRetries,
      concurrency: c.concurrency ?? 64,
      chatTemplateKwargs: null,
      ...(c.retryBaseMs !== undefined ? { retry: { baseDelayMs: c.retryBaseMs } } : {}),
    },
    sink ? { sink } : {},
  );
}

// vLLM's response fields that the `openai` types do not know.
interface VllmChoice {
  text?: unknown;
  finish_reason?: unknown;
  stop_reason?: unknown;
  token_ids?: unknown;
  prompt_token_ids?: unknown;
  logprobs?: { tokens?: unknown; token_logprobs?: unknown } | null;
}

const isIdArray = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0);

/** `token_id:123` -> 123 (vLLM with return_tokens_as_token_ids). */
function idFromTokenString(s: unknown): number | null {
  const m = typeof s === 'string' ? /^token_id:(\d+)$/.exec(s) : null;
  return m ? Number(m[1]) : null;
}

/** Validates one vLLM-shaped choice against the request; throws InputError naming the URL and the field. */
export function readChoice(choice: VllmChoice | undefined, promptIds: readonly number[], url: string): CompletionResult {
  const bad = (field: string, rule: string) =>
    new InputError(`${url}: response field ${field} ${rule}; the server must speak vLLM's /v1/completions protocol with logprobs=1 and return_token_ids=true`);
  if (!choice) throw bad('choices[0]', 'is missing');
  const finish = choice.finish_reason;
  const deadEnd = finish === 'abort' && choice.stop_reason === 'grammar_dead_end';
  if (finish !== 'stop' && finish !== 'length' && !deadEnd) throw bad('choices[0].finish_reason', `is ${JSON.stringify(finish)}, expected "stop" or "length"`);
  const lp = choice.logprobs;
  if (!lp || !Array.isArray(lp.token_logprobs)) throw bad('choices[0].logprobs.token_logprobs', 'is missing (request logprobs: 1)');
  const logprobs = lp.token_logprobs as unknown[];
  if (!logprobs.every((x) => typeof x === 'number' && Number.isFinite(x) && x <= 1e-6))
    throw bad('choices[0].logprobs.token_logprobs', 'holds a value that is not a finite logprob <= 0');
  let ids: number[];
  if (choice.token_ids !== undefined && choice.token_ids !== null) {
    if (!isIdArray(choice.token_ids)) throw bad('choices[0].token_ids', 'is not a list of token ids');
    ids = choice.token_ids;
  } else {
    const tokens = Array.isArray(lp.tokens) ? lp.tokens.map(idFromTokenString) : null;
    if (!tokens || tokens.some((t) => t === null)) throw bad('choices[0].logprobs.tokens', 'are not "token_id:N" strings and token_ids is absent');
    ids = tokens as number[];
  }
  if (ids.length !== logprobs.length) throw bad('choices[0].token_ids', `has ${ids.length} ids but ${logprobs.length} logprobs`);
  const serverPrompt = choice.prompt_token_ids;
  if (serverPrompt !== undefined && serverPrompt !== null) {
    if (!isIdArray(serverPrompt)) throw bad('choices[0].prompt_token_ids', 'is not a list of token ids');
    const i = firstMismatch(serverPrompt, promptIds);
    if (i >= 0)
      throw new InputError(
        `${url}: the server's prompt_token_ids differ from ours at position ${i} (server ${serverPrompt[i]}, ours ${promptIds[i]}; lengths ${serverPrompt.length} vs ${promptIds.length}); ` +
          'the trainer would score a different prompt than was sampled: send the prompt as token ids and do not let the server re-tokenize',
      );
  }
  return {
    completionIds: ids,
    logprobs: logprobs as number[],
    text: typeof choice.text === 'string' ? choice.text : '',
    finishReason: deadEnd ? 'abort' : finish,
  };
}

/** gsteer serve's top-level `gsteer_structured_outputs` (serve/responses.ts), or undefined. */
export function readApplied(v: unknown): AppliedConstraint | undefined {
  const o = v as { spec_sha256?: unknown; token_filter?: unknown; token_filter_version?: unknown; max_tokens?: unknown } | null | undefined;
  if (!o || typeof o.spec_sha256 !== 'string' || typeof o.max_tokens !== 'number') return undefined;
  return {
    specSha256: o.spec_sha256,
    tokenFilter: typeof o.token_filter === 'string' ? o.token_filter : null,
    tokenFilterVersion: typeof o.token_filter_version === 'number' ? o.token_filter_version : null,
    maxTokens: o.max_tokens,
  };
}

function firstMismatch(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/**
 * PolicyClient over the endpoints/ layer (role "policy": gsteer's retry rule, the concurrency
 * cap, call records), vLLM extra body fields passed through. A response that breaks the
 * protocol (readChoice) is an InputError, not retried: the server is the wrong kind.
 */
export class OpenAIPolicyClient implements PolicyClient {
  private readonly url: string;
  private readonly endpoint: Endpoint;

  constructor(endpoint: Endpoint | PolicyClientConfig) {
    this.endpoint = 'chat' in endpoint ? endpoint : policyEndpoint(endpoint);
    this.url = endpointUrl(this.endpoint.options.baseUrl, 'completions');
  }

  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const body = {
      model: req.model,
      prompt: req.promptIds,
      max_tokens: req.maxTokens,
      temperature: req.temperature,
      top_p: req.topP,
      n: 1,
      logprobs: 1,
      ...(req.seed !== undefined ? { seed: req.seed } : {}),
      // vLLM extras: sampled ids back as ids, and the prompt ids it saw.
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      ...(req.constraint
        ? {
            structured_outputs: { grammar: req.constraint.grammar },
            ...(req.constraint.tokenFilter ? { gsteer_token_filter: req.constraint.tokenFilter } : {}),
          }
        : {}),
    };
    const res = await this.endpoint.request('completions', async (client) => {
      const r = await client.completions.create(body as OpenAI.CompletionCreateParamsNonStreaming);
      return { value: r, usage: r.usage ? { promptTokens: r.usage.prompt_tokens, completionTokens: r.usage.completion_tokens } : null };
    });
    const choice = (res.choices as unknown as VllmChoice[] | undefined)?.[0];
    const top = res as unknown as { prompt_token_ids?: unknown; gsteer_structured_outputs?: unknown };
    // Some servers put prompt_token_ids at the top level (chat shape); accept either place.
    const merged =
      choice && choice.prompt_token_ids === undefined && top.prompt_token_ids !== undefined ? { ...choice, prompt_token_ids: top.prompt_token_ids } : choice;
    const result = readChoice(merged, req.promptIds, this.url);
    const applied = req.constraint ? readApplied(top.gsteer_structured_outputs) : undefined;
    const cached = (res.usage as { prompt_tokens_details?: { cached_tokens?: unknown } | null } | undefined)?.prompt_tokens_details?.cached_tokens;
    // vLLM sends the details only with --enable-prompt-tokens-details; gsteer serve always
    const cachedPromptTokens =
      Number.isInteger(cached) && (cached as number) >= 0 && (cached as number) <= req.promptIds.length ? (cached as number) : undefined;
    return { ...result, ...(applied ? { applied } : {}), ...(cachedPromptTokens !== undefined ? { cachedPromptTokens } : {}) };
  }
}
