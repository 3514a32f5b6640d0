// Test helper: a real OpenAI-compatible /v1/embeddings server on 127.0.0.1 (port 0) that
// embeds with the hashed encoder. Used by the encoder conformance suite.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashedEmbedding } from '../../encoders/hashed.ts';

export async function startEmbeddingServer(dim = 64): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const { input } = JSON.parse(body) as { input: string[] };
      const data = input.map((t, index) => ({ object: 'embedding', index, embedding: Array.from(hashedEmbedding(t, dim)) }));
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data, model: 'hashed', usage: { prompt_tokens: 0, total_tokens: 0 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
