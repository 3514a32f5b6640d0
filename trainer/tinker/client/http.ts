// The Tinker client's HTTP, on the endpoints layer (endpoints/: one retry rule for every
// outbound call: 5xx / 408 / 429 / timeouts retried with backoff, Retry-After honoured and
// capped, other 4xx not retried, a concurrency cap, a record per attempt). Each call carries
// its idempotency key (X-Idempotency-Key, the SDK's header) on every attempt, so a retried
// submit is the same request to the server; the API key goes as X-API-Key (the SDK's header),
// read from the environment variable named in the options and never logged. A 404 naming a
// model or session the server does not have is ModelLostError (the server restarted or ended
// the session: reload the last saved state).
import { AsyncLocalStorage } from 'node:async_hooks';
import type OpenAI from 'openai';
import { createEndpoint, type CallRecord, type Endpoint, type RetryTiming } from '../../../endpoints/index.ts';
import { InputError } from '../../../util/errors.ts';
import { nullTrainerSink, type TrainerCallRecord, type TrainerCallSink } from './records.ts';

export interface TinkerHttpOptions {
  /** The server, without /api/v1 (e.g. http://127.0.0.1:8001). */
  baseUrl: string;
  /** Environment variable holding the API key (sent as X-API-Key); unset: none sent. */
  apiKeyEnv?: string;
  /** One HTTP attempt (must exceed the server's retrieve_future hold, 10 s on gsteer's). */
  timeoutMs: number;
  maxRetries: number;
  /** Calls in flight at once. */
  concurrency: number;
  retry?: Partial<RetryTiming>;
  sink?: TrainerCallSink;
  sleep?: (ms: number) => Promise<void>;
}

export interface HttpReply {
  contentType: string;
  bytes: Uint8Array;
}

/** The server does not know the model or session any more (restarted, session ended, unloaded). */
export class ModelLostError extends Error {
  override name = 'ModelLostError';
}

interface Pending {
  route: string;
  requestId: string | null;
  modelId: string | null;
  key: string | null;
  bytesSent: number;
  bytesReceived: number;
}

export class TinkerHttp {
  private readonly ep: Endpoint;
  private readonly als = new AsyncLocalStorage<Pending>();
  private readonly apiKey: string | undefined;

  constructor(readonly o: TinkerHttpOptions) {
    this.apiKey = o.apiKeyEnv ? process.env[o.apiKeyEnv] || undefined : undefined;
    const sink = o.sink ?? nullTrainerSink;
    this.ep = createEndpoint(
      {
        role: 'trainer',
        baseUrl: `${o.baseUrl.replace(/\/+$/, '')}/api/v1`,
        model: 'tinker',
        apiKeyEnv: o.apiKeyEnv,
        timeoutMs: o.timeoutMs,
        maxRetries: o.maxRetries,
        concurrency: o.concurrency,
        retry: o.retry,
      },
      {
        sink: {
          record: (r: CallRecord) => {
            const p = this.als.getStore();
            const full: TrainerCallRecord = {
              ...r,
              route: p?.route ?? '',
              requestId: p?.requestId ?? null,
              modelId: p?.modelId ?? null,
              idempotencyKey: p?.key ?? null,
              attempt: r.retries + 1,
              bytesSent: p?.bytesSent ?? 0,
              bytesReceived: p?.bytesReceived ?? 0,
            };
            sink.record(full);
            if (p) p.bytesReceived = 0;
          },
        },
        ...(o.sleep ? { sleep: o.sleep } : {}),
      },
    );
  }

  /** POST (or GET without a body) one route; the reply's bytes and content type. `onReply` may read the future id for the record. */
  async call(
    route: string,
    body: { json?: unknown; bytes?: Uint8Array; headers?: Record<string, string> } | null,
    meta: { key: string | null; modelId?: string | null; requestId?: string | null; accept?: string },
  ): Promise<HttpReply> {
    const payload: Uint8Array | undefined = body ? (body.bytes ?? new TextEncoder().encode(JSON.stringify(body.json ?? {}))) : undefined;
    const pending: Pending = {
      route,
      requestId: meta.requestId ?? null,
      modelId: meta.modelId ?? null,
      key: meta.key,
      bytesSent: payload?.length ?? 0,
      bytesReceived: 0,
    };
    const headers: Record<string, string> = {
      accept: meta.accept ?? 'application/json',
      ...(body?.bytes ? {} : { 'content-type': 'application/json' }),
      ...body?.headers,
    };
    if (meta.key) headers['x-idempotency-key'] = meta.key;
    if (this.apiKey) headers['x-api-key'] = this.apiKey;
    try {
      return await this.als.run(pending, () =>
        this.ep.request(route, async (client: OpenAI) => {
          const opts = { headers, __binaryResponse: true, maxRetries: 0, ...(payload ? { body: payload } : {}) };
          const res = (await (payload ? client.post(`/${route}`, opts) : client.get(`/${route}`, opts))) as unknown as Response;
          const bytes = new Uint8Array(await res.arrayBuffer());
          pending.bytesReceived = bytes.length;
          const contentType = res.headers.get('content-type') ?? '';
          if (!pending.requestId && contentType.includes('json') && bytes.length < 4096)
            pending.requestId = (JSON.parse(Buffer.from(bytes).toString('utf8')) as { request_id?: string }).request_id ?? null;
          return { value: { contentType, bytes }, usage: null };
        }),
      );
    } catch (e) {
      if (e instanceof InputError && /HTTP 404/.test(e.message) && /is not (loaded|open) on this server/.test(e.message)) throw new ModelLostError(e.message);
      throw e;
    }
  }

  /** A JSON answer of `call`. */
  async json<T>(route: string, body: unknown, meta: { key: string | null; modelId?: string | null }): Promise<T> {
    const r = await this.call(route, body === null ? null : { json: body }, meta);
    return JSON.parse(Buffer.from(r.bytes).toString('utf8')) as T;
  }
}
