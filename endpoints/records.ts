// One record per attempt of an LLM call (and per cache hit), for the run directory's
// llm_calls.jsonl and the per-role metrics. Records carry no API key, no prompt and no reply
// text: only where, who, how long, how many tokens and how it ended.
import { maskText } from '../util/secrets.ts';

/**
 * ok | cached | http_<code> | timeout (the deadline, body included) | connection (refused,
 * reset, cut off mid-body) | too_large (a reply over maxResponseMb) | reply_error:<kind> |
 * error (an unexpected exception, i.e. a bug; never retried).
 */
export type CallStatus = 'ok' | 'cached' | 'timeout' | 'connection' | 'too_large' | 'error' | `http_${number}` | `reply_error:${string}`;

export interface CallRecord {
  /** ISO time the attempt started. */
  ts: string;
  role: string;
  /** The request URL with any credentials masked (client.ts maskUrl). */
  endpoint: string;
  model: string;
  status: CallStatus;
  /** Time from sending to the answer (or failure) of this attempt; 0 for a cache hit. */
  latencyMs: number;
  /** From the server's `usage`; null when it sent none (failures, cache hits). */
  promptTokens: number | null;
  completionTokens: number | null;
  /** Retries before this attempt: 0 for the first attempt, k for the k-th retry. */
  retries: number;
  /** A short reason for a failed attempt (at most 200 characters, no reply text); null when ok. */
  error: string | null;
}

export interface CallSink {
  record(r: CallRecord): void;
}

/** A sink that drops records (the default when a caller wants none). */
export const nullSink: CallSink = { record() {} };

/** Send each record to every sink (e.g. the JSONL file and the metrics aggregator). */
export function teeSinks(...sinks: CallSink[]): CallSink {
  return { record: (r) => sinks.forEach((s) => s.record(r)) };
}

/** Error text fit for a record: one line, at most 200 characters, secrets masked (a server may echo the key). */
export function shortError(message: string): string {
  const one = maskText(message).replace(/\s+/g, ' ').trim();
  return one.length > 200 ? `${one.slice(0, 197)}...` : one;
}
