// The HTTP encoder against a real OpenAI-compatible /v1/embeddings server started here
// (node:http on 127.0.0.1, port 0). The server computes embeddings with the hashed encoder,
// scaled by 3 and returned in reverse order, so the client's re-normalization and
// index-ordering are both exercised.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpEncoder } from '../../encoders/http.ts';
import { hashedEmbedding } from '../../encoders/hashed.ts';
import { l2Norm } from '../../encoders/normalize.ts';
import { InputError, TransientError } from '../../util/errors.ts';

interface Seen {
  auth: string | undefined;
  inputs: string[];
  model: string;
}

let server: Server;
let baseUrl: string;
const seen: Seen[] = [];
let failNext = 0; // answer this many requests with HTTP 500 first

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        res.writeHead(404).end();
        return;
      }
      const { input, model, encoding_format } = JSON.parse(body) as { input: string[]; model: string; encoding_format?: string };
      seen.push({ auth: req.headers.authorization, inputs: input, model });
      if (failNext > 0) {
        failNext--;
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'warming up' } }));
        return;
      }
      if (model === 'no-such-model' || encoding_format !== 'float') {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `model ${model} not found` } }));
        return;
      }
      const data = input.map((t, index) => ({ object: 'embedding', index, embedding: Array.from(hashedEmbedding(t, 64), (x) => 3 * x) })).reverse();
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data, model, usage: { prompt_tokens: 0, total_tokens: 0 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  delete process.env.GSTEER_TEST_ENCODER_KEY;
  await new Promise<void>((r) => server.close(() => r()));
});

describe('HttpEncoder', () => {
  it('returns the server embeddings re-normalized, in input order, in batches', async () => {
    process.env.GSTEER_TEST_ENCODER_KEY = 'sk-test-123';
    seen.length = 0;
    const enc = new HttpEncoder({ baseUrl, model: 'mpnet', apiKeyEnv: 'GSTEER_TEST_ENCODER_KEY', batchSize: 2, maxRetries: 0 });
    const texts = ['hotel budget', 'airline', 'vegetarian food', 'museum', 'kids'];
    const vecs = await enc.embed(texts);
    expect(seen.map((s) => s.inputs)).toEqual([['hotel budget', 'airline'], ['vegetarian food', 'museum'], ['kids']]);
    expect(seen[0]!.auth).toBe('Bearer sk-test-123');
    expect(seen[0]!.model).toBe('mpnet');
    expect(enc.dim).toBe(64);
    vecs.forEach((v, i) => {
      expect(l2Norm(v)).toBeCloseTo(1, 6);
      const ref = hashedEmbedding(texts[i]!, 64);
      Array.from(v).forEach((x, d) => expect(x).toBeCloseTo(ref[d]!, 6));
    });
  });

  it('retries a 500 and then succeeds', async () => {
    failNext = 1;
    seen.length = 0;
    const enc = new HttpEncoder({ baseUrl, model: 'mpnet', apiKeyEnv: 'UNSET_ENV_FOR_TEST', batchSize: 8, maxRetries: 2 });
    const [v] = await enc.embed(['budget']);
    expect(seen.length).toBe(2);
    expect(seen[0]!.auth).toBe('Bearer EMPTY');
    expect(l2Norm(v!)).toBeCloseTo(1, 6);
  });

  it('a 400 is bad input (InputError, not retried) naming the endpoint and the model', async () => {
    seen.length = 0;
    const enc = new HttpEncoder({ baseUrl, model: 'no-such-model', apiKeyEnv: 'MY_KEY_ENV', batchSize: 8, maxRetries: 2 });
    const err = await enc.embed(['x']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect(String((err as Error).message)).toMatch(/encoder endpoint .*\/embeddings \(model no-such-model\) rejected the request with HTTP 400/);
    expect(seen.length).toBe(1);
  });

  it('an unreachable server is a TransientError after the retries', async () => {
    const enc = new HttpEncoder({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', apiKeyEnv: 'X', batchSize: 8, maxRetries: 0, timeoutMs: 2000 });
    const err = await enc.embed(['x']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect(String((err as Error).message)).toMatch(/failed after 1 attempt\(s\), last connection.*check that the server is up/);
  });
});
