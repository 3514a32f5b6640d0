// Bounded retries with exponential backoff for calls through the `openai` client
// (STYLE.md §6). Retried: 5xx, connection failures and timeouts. Never retried: 4xx (a bad
// request, an unknown model or adapter, a missing key: retrying cannot fix them). The
// `openai` client's own retries are switched off (maxRetries 0 in openai-client.ts) because
// it would also retry 408/409/429.
import { APIConnectionError, APIError } from 'openai';
import { InputError, TransientError } from '../util/errors.ts';

export interface RetryOptions {
  /** Retries after the first attempt (config `maxRetries`). */
  maxRetries: number;
  /** First backoff; doubles each retry, capped at maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Names the endpoint in the final error, e.g. "policy server http://127.0.0.1:8000/v1/completions". */
  what: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function isRetryable(e: unknown): boolean {
  if (e instanceof APIConnectionError) return true; // includes APIConnectionTimeoutError
  if (e instanceof APIError) return typeof e.status === 'number' && e.status >= 500;
  return e instanceof TransientError;
}

function describe(e: unknown): string {
  if (e instanceof APIError && typeof e.status === 'number') return `HTTP ${e.status}: ${e.message}`;
  return (e as Error)?.message ?? String(e);
}

/** Backoff before retry k (0-based): base * 2^k, capped. Deterministic (no jitter) so tests can time it. */
export function backoffMs(k: number, base = 500, cap = 8000): number {
  return Math.min(cap, base * 2 ** k);
}

export async function withRetries<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isRetryable(e)) {
        if (e instanceof APIError && typeof e.status === 'number')
          throw new InputError(`${opts.what} rejected the request (${describe(e)}); not retried: fix the request, model name or API key`);
        throw e;
      }
      if (attempt >= opts.maxRetries)
        throw new TransientError(`${opts.what} failed after ${attempt + 1} attempt(s): ${describe(e)}; check that the server is up and reachable`);
      await sleep(backoffMs(attempt, opts.baseDelayMs, opts.maxDelayMs));
    }
  }
}
