// method §9: phi served by an OpenAI-compatible `POST {baseUrl}/embeddings` endpoint (vLLM
// `--task embed`, text-embeddings-inference, infinity, OpenAI...), through the `openai`
// npm client: per-request timeout, bounded retries with backoff (the client's own, on
// connection errors, 408/409/429 and 5xx), batches of `batchSize` texts. Vectors are
// re-normalized here: servers differ on whether they normalize, and method §4 needs unit vectors.
import OpenAI from 'openai';
import type { Encoder } from '../../core/encoder.ts';
import { InputError, TransientError } from '../../util/errors.ts';
import { l2NormalizeInPlace } from './normalize.ts';

export interface HttpEncoderOptions {
  baseUrl: string;
  model: string;
  /** Name of the env var holding the API key; the key itself is never logged or stored in config. */
  apiKeyEnv: string;
  batchSize: number;
  timeoutMs?: number;
  maxRetries?: number;
}

export class HttpEncoder implements Encoder {
  readonly name: string;
  private learnedDim = 0;
  private readonly client: OpenAI;

  constructor(private readonly opts: HttpEncoderOptions) {
    this.name = `http:${opts.model}`;
    this.client = new OpenAI({
      baseURL: opts.baseUrl,
      // Local servers (vLLM, TEI) accept any key; "EMPTY" is vLLM's documented placeholder.
      apiKey: process.env[opts.apiKeyEnv] || 'EMPTY',
      timeout: opts.timeoutMs ?? 30_000,
      maxRetries: opts.maxRetries ?? 3,
    });
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
    const where = `encoder ${this.opts.baseUrl} (model ${this.opts.model})`;
    let res: OpenAI.Embeddings.CreateEmbeddingResponse;
    try {
      res = await this.client.embeddings.create({ model: this.opts.model, input: batch, encoding_format: 'float' });
    } catch (e) {
      throw classify(e, where, this.opts.apiKeyEnv);
    }
    if (!Array.isArray(res.data) || res.data.length !== batch.length)
      throw new InputError(`${where}: sent ${batch.length} texts, got ${Array.isArray(res.data) ? res.data.length : 'no'} embeddings back; check that the server implements /v1/embeddings`);
    const vecs = new Array<Float32Array>(batch.length);
    for (const d of res.data) {
      // Responses carry `index`; order by it rather than trusting the array order.
      if (!Number.isInteger(d.index) || d.index < 0 || d.index >= batch.length || vecs[d.index])
        throw new InputError(`${where}: embedding index ${d.index} is out of range or repeated for a batch of ${batch.length}`);
      const emb = d.embedding as unknown;
      if (!Array.isArray(emb) || emb.length === 0 || !emb.every((x) => typeof x === 'number' && Number.isFinite(x)))
        throw new InputError(`${where}: embedding ${d.index} is not a non-empty list of finite numbers`);
      if (this.learnedDim === 0) this.learnedDim = emb.length;
      if (emb.length !== this.learnedDim)
        throw new InputError(`${where}: embedding ${d.index} has ${emb.length} dimensions, earlier ones had ${this.learnedDim}; one encoder must return one size`);
      vecs[d.index] = l2NormalizeInPlace(Float32Array.from(emb as number[]));
    }
    return vecs;
  }
}

/** Retries are exhausted by now: 4xx other than timeouts/rate limits are bad input, the rest transient. */
function classify(e: unknown, where: string, apiKeyEnv: string): Error {
  if (e instanceof OpenAI.APIConnectionError) return new TransientError(`${where}: cannot reach the server (${e.message})`);
  if (e instanceof OpenAI.APIError) {
    const status = e.status ?? 0;
    if (status >= 400 && status < 500 && status !== 408 && status !== 429)
      return new InputError(`${where}: the server rejected the request with HTTP ${status}: ${e.message}; check encoder.model, encoder.baseUrl and the API key in $${apiKeyEnv}`);
    return new TransientError(`${where}: HTTP ${status}: ${e.message}`);
  }
  return e instanceof Error ? e : new Error(String(e));
}
