// The retry rule, in one place. Retried: HTTP 5xx, 408 and 429, connection errors (a reset
// mid-body included), timeouts (the deadline covers the body), a reply over the size cap
// and refused replies (BadReply). Never retried: every other 4xx (a bad request, an unknown
// model, a missing key: repeating it cannot help), reported as InputError with the fix.
// Waits are deterministic (no jitter): the server's Retry-After when it sends one (seconds
// or an HTTP-date, RFC 9110 §10.2.3; OpenAI's retry-after-ms first), clamped to
// [baseDelayMs, maxRetryAfterMs] (a past date, 0 or a negative value would retry at once in
// a loop; a huge one would park the run); otherwise exponential backoff baseDelayMs * 2^k
// capped at maxDelayMs. A Retry-After that is not a number or a date is ignored.
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { ConnectionLost, DeadlineExceeded, ResponseTooLarge } from './bounded-fetch.ts';
import { BadReply } from './errors.ts';
import type { CallStatus } from './records.ts';
import type { RetryTiming } from './types.ts';

export const DEFAULT_RETRY_TIMING: RetryTiming = { baseDelayMs: 500, maxDelayMs: 8000, maxRetryAfterMs: 60_000 };

export interface Failure {
  status: CallStatus;
  retryable: boolean;
  /** The wait the server asked for (ms), when it did. */
  retryAfterMs: number | null;
  /** Short text for records and errors (no reply text). */
  message: string;
  /** HTTP status, when there was one. */
  httpStatus: number | null;
}

/**
 * Milliseconds the server asked to wait, from retry-after-ms or Retry-After (delta-seconds,
 * or an HTTP-date: RFC 9110 IMF-fixdate, or the obsolete RFC 850 / asctime forms that
 * Date.parse reads when they name a weekday and a GMT time); null if absent or unreadable.
 * Not clamped here (delayBeforeRetry clamps): a past date gives a negative number.
 */
export function parseRetryAfter(headers: Headers | undefined, nowMs: number): number | null {
  const ms = headers?.get('retry-after-ms')?.trim();
  if (ms && /^-?\d+(\.\d+)?$/.test(ms)) return Number(ms);
  const v = headers?.get('retry-after')?.trim();
  if (!v) return null;
  if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v) * 1000;
  // Only a date with letters in it: Date.parse reads "-5" or "2001" as years.
  if (!/[a-z]/i.test(v) || !/\d{1,2}:\d{2}/.test(v)) return null;
  const date = Date.parse(v);
  return Number.isNaN(date) ? null : date - nowMs;
}

/** Backoff before retry k (0-based) when the server named no wait. */
export function backoffMs(k: number, t: RetryTiming): number {
  return Math.min(t.maxDelayMs, t.baseDelayMs * 2 ** k);
}

export function delayBeforeRetry(f: Failure, k: number, t: RetryTiming): number {
  if (f.retryAfterMs === null || !Number.isFinite(f.retryAfterMs)) return f.retryAfterMs === Infinity ? t.maxRetryAfterMs : backoffMs(k, t);
  return Math.min(t.maxRetryAfterMs, Math.max(t.baseDelayMs, f.retryAfterMs));
}

/** What the user should change when a server rejects a request with `status`. */
export function rejectionFix(status: number, apiKeyEnv: string | undefined): string {
  if (status === 401 || status === 403) return `set a valid API key in $${apiKeyEnv ?? '(apiKeyEnv is not set)'}`;
  if (status === 404) return 'check the model name (GET /v1/models lists what the server serves) and the baseUrl (it ends in /v1)';
  return "check the request: the prompt against the context length, max_tokens, responseFormat (use json_object or none where the server lacks json_schema) and chatTemplateKwargs (null for servers that reject unknown fields, such as OpenAI's API)";
}

/** The rule: how an attempt failed and whether to try again; null for an exception that is not a call failure (a bug). */
export function classifyFailure(e: unknown, nowMs: number): Failure | null {
  if (e instanceof BadReply) return { status: `reply_error:${e.kind}`, retryable: true, retryAfterMs: null, message: e.detail, httpStatus: null };
  // bounded-fetch.ts: thrown from the body read, which the SDK passes through as is
  if (e instanceof DeadlineExceeded) return { status: 'timeout', retryable: true, retryAfterMs: null, message: e.message, httpStatus: null };
  if (e instanceof ConnectionLost) return { status: 'connection', retryable: true, retryAfterMs: null, message: e.message, httpStatus: null };
  if (e instanceof ResponseTooLarge) return { status: 'too_large', retryable: true, retryAfterMs: null, message: e.message, httpStatus: null };
  // before the headers the SDK wraps our fetch's error: a deadline says so in its cause
  if (e instanceof APIConnectionError && e.cause instanceof DeadlineExceeded)
    return { status: 'timeout', retryable: true, retryAfterMs: null, message: e.cause.message, httpStatus: null };
  if (e instanceof APIConnectionError && e.cause instanceof ResponseTooLarge)
    return { status: 'too_large', retryable: true, retryAfterMs: null, message: e.cause.message, httpStatus: null };
  if (e instanceof APIConnectionTimeoutError) return { status: 'timeout', retryable: true, retryAfterMs: null, message: 'request timed out', httpStatus: null };
  if (e instanceof APIConnectionError) return { status: 'connection', retryable: true, retryAfterMs: null, message: e.message, httpStatus: null };
  if (e instanceof APIError && typeof e.status === 'number') {
    const s = e.status;
    const retryable = s >= 500 || s === 429 || s === 408;
    return { status: `http_${s}`, retryable, retryAfterMs: retryable ? parseRetryAfter(e.headers, nowMs) : null, message: e.message, httpStatus: s };
  }
  return null;
}
