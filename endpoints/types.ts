// The shapes every caller of an OpenAI-compatible endpoint shares: what an endpoint is
// (EndpointOptions, one per role), what a chat request carries, and what comes back.
// Field names follow the OpenAI / vLLM request bodies they become (top_p, max_tokens, ...).

/** One chat turn (the same shape as the tokenizer's ChatMessage, kept here so endpoints/ imports nothing above util/). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * How a JSON answer is asked for: `json_schema` sends the schema as `response_format`
 * (vLLM, OpenAI, SGLang); `json_object` only asks for some JSON object (servers without
 * schema support); `none` sends nothing and relies on the prompt. The reply is validated
 * against the schema in every mode.
 */
export type ResponseFormatMode = 'json_schema' | 'json_object' | 'none';

export interface RetryTiming {
  /** First backoff in ms; retry k waits baseDelayMs * 2^k, capped at maxDelayMs (no jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A server's Retry-After is honoured up to this many ms. */
  maxRetryAfterMs: number;
}

export interface EndpointOptions {
  /** Who calls: policy, simulator, judge, teacher, extractor, encoder, builder, agent ... (names the metrics llm/<role>/...). */
  role: string;
  /** Up to and including /v1, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: string;
  model: string;
  /** Environment variable holding the API key; unset or empty sends "EMPTY" (vLLM's placeholder). The key is never logged. */
  apiKeyEnv?: string;
  /** One deadline per attempt for the whole exchange: connect, headers and the body's last byte. */
  timeoutMs: number;
  /** A reply body larger than this (MiB) is a failed attempt (status too_large); default 32. */
  maxResponseMb?: number;
  /** Retries after the first attempt. */
  maxRetries: number;
  /** Most calls in flight at once through this endpoint object. */
  concurrency: number;
  /** vLLM's `chat_template_kwargs`, e.g. {enable_thinking: false}; null or absent sends nothing (OpenAI's API rejects unknown fields). */
  chatTemplateKwargs?: Record<string, unknown> | null;
  /** Extra body fields sent with every request (vLLM's top_k, repetition_penalty ...); our own fields win on a clash. */
  extraBody?: Record<string, unknown>;
  /** Default json_schema. */
  responseFormat?: ResponseFormatMode;
  /** Default {baseDelayMs: 500, maxDelayMs: 8000, maxRetryAfterMs: 60000}. */
  retry?: Partial<RetryTiming>;
}

/** Sampling parameters and messages of one chat call (absent fields are not sent: the server's defaults apply). */
export interface ChatRequest {
  messages: ChatMessage[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  seed?: number;
  stop?: string[];
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
}

/** A plain-text answer: the reply content with any thinking removed. */
export interface ChatReply {
  text: string;
  usage: Usage | null;
}

/** A JSON answer that passed the schema: `value` is the schema's output, `text` the JSON text it came from. */
export interface JsonReply<T> {
  value: T;
  text: string;
  usage: Usage | null;
}

export interface EmbedReply {
  /** One vector per input text, in input order, as the server sent them (not re-normalized). */
  vectors: number[][];
  usage: Usage | null;
}
