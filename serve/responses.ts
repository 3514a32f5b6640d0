// Response bodies in vLLM's shape (method §9 wire protocol): `text_completion` for
// /v1/completions and `chat.completion` for /v1/chat/completions, with sampled token ids
// (EOS included when it ended the choice) and their raw logprobs.
import { randomUUID } from 'node:crypto';
import type { Tokenizer } from '../core/tokenizer.ts';
import type { ChoiceResult } from './generation.ts';
import type { TokenLogprob } from './sampling.ts';
import type { CompiledConstraint } from '../structured/compile.ts';
import { POLICY_FILTER_VERSION } from '../structured/policy-filter.ts';
import { REFINER_FILTER_VERSION } from '../structured/refiner-filter.ts';

export interface TokenNames {
  tok: Tokenizer;
  asIds: boolean; // return_tokens_as_token_ids
}

/** `token_id:N` (vLLM's return_tokens_as_token_ids) or the token's own text, specials included. */
export function tokenName(names: TokenNames, id: number): string {
  return names.asIds ? `token_id:${id}` : names.tok.decode([id]);
}

const utf8Bytes = (s: string) => [...Buffer.from(s, 'utf8')];

/** OpenAI's usage; `cached_tokens`: prompt tokens served from the prefix cache (OpenAI's prompt caching field). */
export function usage(promptTokens: number, completionTokens: number, cachedTokens: number) {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/**
 * Cached prompt tokens of a request: per prompt, those of its first choice (the later choices
 * of the same prompt reuse the first one's blocks, which is not what the request brought).
 */
export function cachedTokensOf(choices: readonly ChoiceResult[], n: number): number {
  return choices.reduce((s, c, i) => s + (i % n === 0 ? c.cachedTokens : 0), 0);
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** One position's top alternatives as {name: logprob}, with the sampled token added (as vLLM does). */
export function topMap(names: TokenNames, alts: TokenLogprob[], id: number, logprob: number): Record<string, number> {
  const map: Record<string, number> = {};
  for (const a of alts) map[tokenName(names, a.id)] = a.logprob;
  map[tokenName(names, id)] ??= logprob;
  return map;
}

function topMaps(names: TokenNames, c: ChoiceResult): Record<string, number>[] | null {
  return c.top ? c.top.map((alts, t) => topMap(names, alts, c.ids[t] as number, c.logprobs[t] as number)) : null;
}

/**
 * `gsteer_structured_outputs`, top level of a constrained response: what was applied, so a
 * rollout can record exactly what the trainer must replay (vLLM sends no such field).
 */
export function appliedConstraint(c: CompiledConstraint | null, maxTokens: number | null) {
  if (!c) return {};
  const filter = c.spec.type === 'grammar' ? (c.spec.filter ?? null) : null;
  return {
    gsteer_structured_outputs: {
      type: c.spec.type,
      spec_sha256: c.hash,
      token_filter: filter,
      token_filter_version: filter === 'policy_turn' ? POLICY_FILTER_VERSION : filter === 'refiner_turn' ? REFINER_FILTER_VERSION : null,
      max_tokens: maxTokens,
      vocab: c.vocab.key,
    },
  };
}

export interface AppliedShape {
  constraint: CompiledConstraint | null;
  maxTokens: number | null;
}

export interface CompletionShape extends AppliedShape {
  model: string;
  prompts: number[][];
  n: number;
  logprobs: boolean;
  returnTokenIds: boolean;
}

export function completionResponse(names: TokenNames, shape: CompletionShape, choices: ChoiceResult[]) {
  return {
    id: `cmpl-${randomUUID().replaceAll('-', '')}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: shape.model,
    choices: choices.map((c, index) => ({
      index,
      text: c.text,
      finish_reason: c.finishReason,
      stop_reason: c.stopReason,
      logprobs: shape.logprobs
        ? {
            tokens: c.ids.map((id) => tokenName(names, id)),
            token_logprobs: c.logprobs,
            top_logprobs: topMaps(names, c),
            text_offset: c.offsets,
          }
        : null,
      ...(shape.returnTokenIds ? { token_ids: c.ids, prompt_token_ids: shape.prompts[Math.floor(index / shape.n)] } : {}),
    })),
    usage: usage(sum(shape.prompts.map((p) => p.length)), sum(choices.map((c) => c.ids.length)), cachedTokensOf(choices, shape.n)),
    ...appliedConstraint(shape.constraint, shape.maxTokens),
  };
}

/** One entry of a chat `logprobs.content` list. */
export function chatLogprobEntry(names: TokenNames, id: number, logprob: number, alts: TokenLogprob[] | null) {
  const entry = (i: number, lp: number) => ({ token: tokenName(names, i), logprob: lp, bytes: utf8Bytes(names.tok.decode([i])) });
  return { ...entry(id, logprob), top_logprobs: (alts ?? []).map((a) => entry(a.id, a.logprob)) };
}

function chatLogprobs(names: TokenNames, c: ChoiceResult) {
  return { content: c.ids.map((id, t) => chatLogprobEntry(names, id, c.logprobs[t] as number, c.top?.[t] ?? null)) };
}

export interface ChatShape extends AppliedShape {
  model: string;
  promptIds: number[];
  logprobs: boolean;
  returnTokenIds: boolean;
}

export function chatResponse(names: TokenNames, shape: ChatShape, choices: ChoiceResult[]) {
  return {
    id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: shape.model,
    choices: choices.map((c, index) => ({
      index,
      message: { role: 'assistant', content: c.text },
      logprobs: shape.logprobs ? chatLogprobs(names, c) : null,
      finish_reason: c.finishReason,
      stop_reason: c.stopReason,
      ...(shape.returnTokenIds ? { token_ids: c.ids } : {}),
    })),
    usage: usage(shape.promptIds.length, sum(choices.map((c) => c.ids.length)), cachedTokensOf(choices, choices.length)),
    ...(shape.returnTokenIds ? { prompt_token_ids: shape.promptIds } : {}),
    ...appliedConstraint(shape.constraint, shape.maxTokens),
  };
}
