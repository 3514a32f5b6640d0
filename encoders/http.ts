// method §9: phi served by an OpenAI-compatible `POST {baseUrl}/embeddings` endpoint (vLLM
// `--task embed`, text-embeddings-inference, infinity, OpenAI...) through the endpoints/ layer
// (role "encoder"): per-request timeout, gsteer's retry rule (5xx, timeouts, 429 with
// Retry-After; other 4xx are InputError), a concurrency cap, call records, batches of
// `batchSize` texts, and a reply with missing, repeated, ragged or non-finite vectors refused
// and retried. Vectors are re-normalized here: servers differ on whether they normalize, and
// method §4 needs unit vectors.
import type { Encoder } from '../core/encoder.ts';
import { createEndpoint, type CallSink, type Endpoint } from '../endpoints/index.ts';
import { InputError } from '../util/errors.ts';
import { l2NormalizeInPlace } from './normalize.ts';

export interface HttpEncoderOptions {
  baseUrl: string;
  model: string;
  /** Name of the env var holding the API key; the key itself is never logged or stored in config. */
  apiKeyEnv: string;
  batchSize: number;
  timeoutMs?: number;
  maxRetries?: number;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Where call records go (the run's llm_calls.jsonl in a run). */
  sink?: CallSink;
}

export class HttpEncoder implements Encoder {
  readonly name: string;
  private learnedDim = 0;
  private readonly endpoint: Endpoint;

  constructor(private readonly opts: HttpEncoderOptions) {
    this.name = `http:${opts.model}`;
    this.endpoint = createEndpoint(
      {
        role: 'encoder',
        baseUrl: opts.baseUrl,
        model: opts.model,
        apiKeyEnv: opts.apiKeyEnv,
        timeoutMs: opts.timeoutMs ?? 30_000,
        maxRetries: opts.maxRetries ?? 3,
        concurrency: opts.concurrency ?? 8,
        chatTemplateKwargs: null,
      },
      opts.sink ? { sink: opts.sink } : {},
    );
  }

  /** The server's embedding size, known after the first call (0 before). */
  get dim(): number {
    return this.learnedDim;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.opts.batchSize) out.push(...(await this.embedBatch(texts.slice(i, i + this.opts.batchSize))));
    return out;
  }

  private async embedBatch(batch: string[]): Promise<Float32Array[]> {
    const { vectors } = await this.endpoint.embed(batch);
    return vectors.map((emb, i) => {
      if (this.learnedDim === 0) this.learnedDim = emb.length;
      if (emb.length !== this.learnedDim)
        throw new InputError(
          `encoder ${this.opts.baseUrl} (model ${this.opts.model}): embedding ${i} has ${emb.length} dimensions, earlier ones had ${this.learnedDim}; one encoder must return one size`,
        );
      return l2NormalizeInPlace(Float32Array.from(emb));
    });
  }
}
