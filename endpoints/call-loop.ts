// One call = attempts under the retry rule (retry-rule.ts), each attempt inside the
// endpoint's concurrency cap and recorded (records.ts). The cap holds a slot only while a
// request is in flight, not during the wait before a retry.
import type { LimitFunction } from 'p-limit';
import { InputError, TransientError } from '../util/errors.ts';
import { BadReply, ReplyError } from './errors.ts';
import { type CallSink, type CallStatus, shortError } from './records.ts';
import { classifyFailure, delayBeforeRetry, rejectionFix } from './retry-rule.ts';
import type { RetryTiming, Usage } from './types.ts';

export interface LoopContext {
  role: string;
  model: string;
  /** The masked URL of the route called. */
  url: string;
  apiKeyEnv: string | undefined;
  maxRetries: number;
  timing: RetryTiming;
  limit: LimitFunction;
  sink: CallSink;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

export interface AttemptOutcome<T> {
  value: T;
  usage: Usage | null;
}

/** `attempt(k, previous)`: k = retries so far; previous = what the previous attempt threw (null on the first). */
export async function callWithRetries<T>(ctx: LoopContext, attempt: (k: number, previous: unknown) => Promise<AttemptOutcome<T>>): Promise<T> {
  const who = `${ctx.role} endpoint ${ctx.url} (model ${ctx.model})`;
  let previous: unknown = null;
  for (let k = 0; ; k++) {
    let start = 0;
    const record = (status: CallStatus, usage: Usage | null, error: string | null, end: number) =>
      ctx.sink.record({
        ts: new Date(start).toISOString(),
        role: ctx.role,
        endpoint: ctx.url,
        model: ctx.model,
        status,
        latencyMs: end - start,
        promptTokens: usage?.promptTokens ?? null,
        completionTokens: usage?.completionTokens ?? null,
        retries: k,
        error: error === null ? null : shortError(error),
      });
    try {
      const prev = previous;
      const out = await ctx.limit(() => ((start = ctx.now()), attempt(k, prev)));
      record('ok', out.usage, null, ctx.now());
      return out.value;
    } catch (e) {
      const end = ctx.now();
      const f = classifyFailure(e, end);
      if (!f) {
        record('error', null, (e as Error)?.message ?? String(e), end);
        throw e;
      }
      record(f.status, null, f.message, end);
      previous = e;
      if (!f.retryable)
        throw new InputError(
          `${who} rejected the request with HTTP ${f.httpStatus}: ${shortError(f.message)}; not retried: ${rejectionFix(f.httpStatus ?? 400, ctx.apiKeyEnv)}`,
        );
      if (k >= ctx.maxRetries) {
        if (e instanceof BadReply)
          throw new ReplyError(`${who}: every reply of ${k + 1} attempt(s) was refused; last: ${e.kind} (${e.detail})`, e.kind, e.content, k + 1);
        throw new TransientError(
          `${who} failed after ${k + 1} attempt(s), last ${f.status}: ${shortError(f.message)}; check that the server is up and reachable, or raise maxRetries / timeoutMs`,
        );
      }
      await ctx.sleep(delayBeforeRetry(f, k, ctx.timing));
    }
  }
}
