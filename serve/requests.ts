// The request bodies of /v1/completions and /v1/chat/completions, validated into typed
// requests (OpenAI names on the wire, camelCase inside). Defaults are OpenAI's / vLLM's:
// temperature 1, top_p 1, top_k off, n 1, completions max_tokens 16, chat max_tokens = the
// rest of the context. Sizes are checked here, before any text is tokenized: a text prompt
// or a chat's messages over maxPromptBytes, a token-id prompt longer than the context, and
// more than maxChoices choices (prompts x n) per request are 400s, so one request cannot
// hold the server's single thread for seconds (tokenizing 15 MB takes about 18 s).
import type { ChatMessage } from '../core/tokenizer.ts';
import { badRequest } from './errors.ts';
import { bool, num, rejectUnsupported, stopStrings, str, tokenIds, type Body } from './fields.ts';
import type { SamplingParams } from './sampling.ts';
import { parseConstraint } from './structured-request.ts';
import type { ConstraintSpec } from '../structured/constraint-spec.ts';

/** vLLM's default --max-logprobs. */
export const MAX_LOGPROBS = 20;
export const MAX_N = 64;

/** Per-request size limits (gsteer serve --max-prompt-bytes, --max-choices). */
export interface RequestLimits {
  /** UTF-8 bytes of a text prompt, or of a chat's messages together. */
  maxPromptBytes: number;
  /** Choices a request may ask for: prompts x n. */
  maxChoices: number;
  /** The model's context in tokens (a token-id prompt longer than it cannot run). */
  maxContext: number;
}

/** Default prompt byte limit: 16 bytes per token of context, far above text (3-5 bytes per Qwen3 token). */
export const promptBytesFor = (maxContext: number) => 16 * maxContext;
export const DEFAULT_MAX_CHOICES = 128;

function checkBytes(bytes: number, what: string, param: string, limits: RequestLimits): void {
  if (bytes > limits.maxPromptBytes)
    throw badRequest(
      `${what} is ${bytes} bytes, above this server's limit of ${limits.maxPromptBytes} bytes (16 per token of the model's ${limits.maxContext}-token context; gsteer serve --max-prompt-bytes sets it); send a shorter prompt`,
      param,
    );
}

export interface GenerateParams {
  model: string;
  maxTokens: number | null; // null: the endpoint's default
  sampling: SamplingParams;
  seed: number | null; // null: a random seed per request
  n: number;
  stop: string[];
  stopTokenIds: number[];
  ignoreEos: boolean;
  returnTokensAsTokenIds: boolean;
  returnTokenIds: boolean;
  /** Server-sent events, one chunk per decode step per choice, then `data: [DONE]`. */
  stream: boolean;
  /** stream_options.include_usage: a last chunk with `usage` and no choices. */
  streamUsage: boolean;
  /** structured_outputs / response_format (+ gsteer_token_filter); null = unconstrained. */
  constraint: ConstraintSpec | null;
}

export interface CompletionRequest extends GenerateParams {
  /** One or more prompts (a batch), each text or token ids. */
  prompts: (string | number[])[];
  logprobs: number | null; // null: none; k >= 0: sampled token + k alternatives
}

export interface ChatRequest extends GenerateParams {
  messages: ChatMessage[];
  logprobs: boolean;
  topLogprobs: number;
}

function generateParams(body: Body, vocabSize: number, maxTokensKey: string): GenerateParams {
  rejectUnsupported(body);
  const streamOptions = (body.stream_options ?? {}) as Body;
  if (typeof streamOptions !== 'object') throw badRequest('stream_options must be an object like {"include_usage": true}', 'stream_options');
  const topK = num(body, 'top_k', -1, { int: true, min: -1 });
  const maxTokens = num(body, maxTokensKey, null, { int: true, min: 1 });
  const ignoreEos = bool(body, 'ignore_eos', false);
  return {
    model: str(body, 'model'),
    maxTokens,
    sampling: {
      temperature: num(body, 'temperature', 1, { min: 0, max: 2 }),
      topP: num(body, 'top_p', 1, { min: 0, minOpen: true, max: 1 }),
      topK: topK <= 0 ? 0 : topK,
    },
    seed: num(body, 'seed', null, { int: true }),
    n: num(body, 'n', 1, { int: true, min: 1, max: MAX_N }),
    stop: stopStrings(body),
    stopTokenIds: body.stop_token_ids == null ? [] : tokenIds(body.stop_token_ids, 'stop_token_ids', vocabSize),
    ignoreEos,
    returnTokensAsTokenIds: bool(body, 'return_tokens_as_token_ids', false),
    returnTokenIds: bool(body, 'return_token_ids', false),
    stream: bool(body, 'stream', false),
    streamUsage: bool(streamOptions, 'include_usage', false),
    constraint: parseConstraint(body, maxTokens, ignoreEos),
  };
}

/** `prompt`: text, token ids, or a non-empty list of either (a batch); sizes checked before anything else. */
function prompts(v: unknown, vocabSize: number, limits: RequestLimits): (string | number[])[] {
  const bad = () => badRequest(`prompt must be a string, a list of token ids, or a list of those but is ${JSON.stringify(v)?.slice(0, 80)}`, 'prompt');
  const one = (p: unknown, key: string): string | number[] => {
    if (typeof p === 'string') {
      checkBytes(Buffer.byteLength(p, 'utf8'), key, 'prompt', limits);
      return p;
    }
    if (!Array.isArray(p)) throw bad();
    if (p.length > limits.maxContext)
      throw badRequest(`${key} has ${p.length} token ids; the model's maximum context length is ${limits.maxContext} tokens`, 'prompt');
    return tokenIds(p, key, vocabSize);
  };
  if (typeof v === 'string') return [one(v, 'prompt')];
  if (!Array.isArray(v) || v.length === 0) throw bad();
  if (v.every((x) => typeof x === 'number')) return [one(v, 'prompt')];
  if (v.length > limits.maxChoices)
    throw badRequest(
      `prompt is a batch of ${v.length} prompts, above this server's limit of ${limits.maxChoices} choices per request (gsteer serve --max-choices); send fewer prompts per request`,
      'prompt',
    );
  return v.map((p, i) => one(p, `prompt[${i}]`));
}

function checkChoices(prompts: number, n: number, limits: RequestLimits): void {
  if (prompts * n > limits.maxChoices)
    throw badRequest(
      `${prompts} prompt(s) x n ${n} = ${prompts * n} choices, above this server's limit of ${limits.maxChoices} per request (gsteer serve --max-choices); lower n or send fewer prompts per request`,
      'n',
    );
}

export function parseCompletionRequest(body: Body, vocabSize: number, limits: RequestLimits): CompletionRequest {
  const list = prompts(body.prompt, vocabSize, limits);
  const params = generateParams(body, vocabSize, 'max_tokens');
  checkChoices(list.length, params.n, limits);
  return { ...params, prompts: list, logprobs: num(body, 'logprobs', null, { int: true, min: 0, max: MAX_LOGPROBS }) };
}

const ROLES = ['system', 'user', 'assistant'] as const;

/** content: a string, or OpenAI content parts of type "text". */
function messageContent(v: unknown, i: number): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((p) => p && typeof p === 'object' && p.type === 'text' && typeof p.text === 'string'))
    return v.map((p) => p.text as string).join('');
  throw badRequest(`messages[${i}].content must be a string or a list of {type: "text", text} parts`, `messages[${i}].content`);
}

function messages(v: unknown): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) throw badRequest('messages must be a non-empty list of {role, content}', 'messages');
  return v.map((m, i) => {
    const role = (m as Body | null)?.role;
    if (!ROLES.includes(role as ChatMessage['role']))
      throw badRequest(`messages[${i}].role must be one of ${ROLES.join(', ')} but is ${JSON.stringify(role)}`, `messages[${i}].role`);
    return { role: role as ChatMessage['role'], content: messageContent((m as Body).content, i) };
  });
}

export function parseChatRequest(body: Body, vocabSize: number, limits: RequestLimits): ChatRequest {
  const kwargs = body.chat_template_kwargs as Body | undefined;
  if (kwargs?.enable_thinking === true)
    throw badRequest('chat_template_kwargs.enable_thinking must be false: gsteer serve renders Qwen3 ChatML with thinking disabled', 'chat_template_kwargs');
  const key = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
  const logprobs = bool(body, 'logprobs', false);
  const topLogprobs = num(body, 'top_logprobs', 0, { int: true, min: 0, max: MAX_LOGPROBS });
  if (topLogprobs > 0 && !logprobs) throw badRequest('top_logprobs needs logprobs: true; set logprobs or drop top_logprobs', 'top_logprobs');
  const list = messages(body.messages);
  checkBytes(
    list.reduce((s, m) => s + Buffer.byteLength(m.content, 'utf8'), 0),
    'messages (all contents together)',
    'messages',
    limits,
  );
  const params = generateParams(body, vocabSize, key);
  checkChoices(1, params.n, limits);
  return { ...params, messages: list, logprobs, topLogprobs };
}
