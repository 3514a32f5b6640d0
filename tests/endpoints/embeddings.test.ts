// /v1/embeddings through the same factory and retry rule.
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../endpoints/endpoint.ts';
import { readEmbeddings } from '../../endpoints/embeddings.ts';
import { hashedEmbedding } from '../../encoders/hashed.ts';
import { startFakeVllm, type FakeVllm } from '../helpers/fake-vllm.ts';
import { options, recordingDeps, statuses } from './helpers.ts';

let server: FakeVllm | null = null;
afterEach(async () => void (await server?.close()));

describe('embeddings', () => {
  it('returns the server vectors in input order, after retrying a 503 and a 429', async () => {
    server = await startFakeVllm({ embeddingDim: 16, serverError: { on: [0], status: 503 }, rateLimit: { on: [1], retryAfter: '3' } });
    const deps = recordingDeps();
    const ep = createEndpoint(options(server.baseUrl, { role: 'encoder', model: 'Qwen/Qwen3-32B' }), deps);
    const r = await ep.embed(['budget trip', 'quiet hotel']);
    expect(r.vectors).toEqual([Array.from(hashedEmbedding('budget trip', 16)), Array.from(hashedEmbedding('quiet hotel', 16))]);
    expect(statuses(deps.records)).toEqual(['http_503', 'http_429', 'ok']);
    expect(deps.sleeps).toEqual([500, 3000]); // backoff after the 503, Retry-After after the 429
    expect(server.requests[2]!.body).toMatchObject({ input: ['budget trip', 'quiet hotel'], encoding_format: 'float' });
    expect(deps.records[2]!.endpoint).toBe(`${server.baseUrl}/embeddings`);
  });

  it('refuses missing, repeated, ragged or non-finite vectors', () => {
    const ok = {
      data: [
        { index: 1, embedding: [3, 4] },
        { index: 0, embedding: [1, 2] },
      ],
    };
    expect(readEmbeddings(ok, 2)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(() => readEmbeddings({ data: [{ index: 0, embedding: [1] }] }, 2)).toThrow(/sent 2 texts, got 1/);
    expect(() =>
      readEmbeddings(
        {
          data: [
            { index: 0, embedding: [1] },
            { index: 0, embedding: [2] },
          ],
        },
        2,
      ),
    ).toThrow(/repeated/);
    expect(() =>
      readEmbeddings(
        {
          data: [
            { index: 0, embedding: [1] },
            { index: 1, embedding: [2, 3] },
          ],
        },
        2,
      ),
    ).toThrow(/dimensions/);
    expect(() => readEmbeddings({ data: [{ index: 0, embedding: [null] }] }, 1)).toThrow(/finite numbers/);
  });
});
