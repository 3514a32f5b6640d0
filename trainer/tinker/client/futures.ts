// Waiting on a Tinker future (the SDK's APIFuture): poll retrieve_future until the server
// answers a result or a failure, asking for protobuf where the result can be protobuf. The
// server long-polls (try_again after its hold), so polling again at once is not a busy loop; a
// server that answers try_again at once is paced by `minPollMs`. Past `timeoutMs` the wait
// fails with a TransientError naming the future: the call may still complete on the server,
// and resending it with the same idempotency key returns the same future.
import { InputError, TransientError } from '../../../util/errors.ts';
import { decodeForwardBackwardOutput, decodeSampleResponse } from '../proto-codec.ts';
import { outputFromJson, type ForwardBackwardOutput } from '../forward-backward.ts';
import type { SampleResult } from '../sample.ts';
import { ForwardBackwardOutputJsonSchema } from '../wire.ts';
import type { TinkerHttp } from './http.ts';

/** A failed future (the server's RequestFailedResponse). category "user": the request was wrong; "server": the server failed it. */
export class RequestFailedError extends Error {
  override name = 'RequestFailedError';
  constructor(
    message: string,
    readonly category: string,
    readonly requestId: string,
  ) {
    super(message);
  }
}

export type FutureKind = 'json' | 'forward_backward' | 'sample';
type Out<K extends FutureKind> = K extends 'forward_backward' ? ForwardBackwardOutput : K extends 'sample' ? SampleResult : Record<string, unknown>;

const PROTO = 'application/x-protobuf';

export async function awaitFuture<K extends FutureKind>(
  http: TinkerHttp,
  requestId: string,
  kind: K,
  o: { timeoutMs: number; modelId?: string | null; minPollMs?: number; now?: () => number },
): Promise<Out<K>> {
  const now = o.now ?? Date.now;
  const start = now();
  for (let poll = 0; ; poll++) {
    const t0 = now();
    const r = await http.call(
      'retrieve_future',
      { json: { request_id: requestId, allow_metadata_only: false } },
      { key: `${requestId}#poll${poll}`, requestId, modelId: o.modelId ?? null, accept: kind === 'json' ? 'application/json' : `${PROTO}, application/json` },
    );
    if (r.contentType.includes(PROTO)) return (kind === 'sample' ? decodeSampleResponse(r.bytes) : decodeForwardBackwardOutput(r.bytes)) as Out<K>;
    const body = JSON.parse(Buffer.from(r.bytes).toString('utf8')) as Record<string, unknown>;
    if (body.type === 'try_again') {
      if (now() - start > o.timeoutMs)
        throw new TransientError(
          `future ${requestId} is still pending after ${Math.round((now() - start) / 1000)} s (timeout ${o.timeoutMs / 1000} s); the server is busy or stuck: raise the future timeout, or resend the call with the same idempotency key to wait on the same future`,
        );
      const waited = now() - t0;
      if (waited < (o.minPollMs ?? 100)) await new Promise((res) => setTimeout(res, (o.minPollMs ?? 100) - waited));
      continue;
    }
    if (typeof body.error === 'string') {
      const category = String(body.category ?? 'unknown');
      const msg = `future ${requestId} failed (${category}): ${body.error}`;
      throw category === 'user' ? Object.assign(new InputError(msg), { requestId }) : new RequestFailedError(msg, category, requestId);
    }
    if (kind === 'forward_backward') return outputFromJson(ForwardBackwardOutputJsonSchema.parse(body)) as Out<K>;
    if (kind === 'sample') {
      const seqs = (body.sequences ?? []) as { tokens: number[]; logprobs: number[] | null; stop_reason: string }[];
      return {
        sequences: seqs.map((s) => ({ tokens: s.tokens, logprobs: s.logprobs ?? [], stopReason: s.stop_reason === 'length' ? 'length' : 'stop' })),
        promptLogprobs: (body.prompt_logprobs as (number | null)[] | null) ?? null,
        promptCacheHitTokens: Number(body.prompt_cache_hit_tokens ?? 0),
      } as Out<K>;
    }
    return body as Out<K>;
  }
}
