// One conformance suite for every Encoder implementation (STYLE.md §8): embedded hashed,
// HTTP (against a real local server), ONNX (a real tiny model file) and the LRU cache
// wrapper, all built through the createEncoder factory.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncoderSchema } from '../../configs/schema.ts';
import { createEncoder, CachedEncoder } from '../../encoders/index.ts';
import { cosine, type Encoder } from '../../core/encoder.ts';
import { l2Norm } from '../../encoders/normalize.ts';
import { embeddingLookupModel, wordPieceTokenizerJson } from './onnx-writer.ts';
import { startEmbeddingServer } from './embedding-server.ts';

let server: Awaited<ReturnType<typeof startEmbeddingServer>>;
let onnxDir: string;
const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'hotel', 'budget', 'night', 'vegan', 'food', 'kids', 'museum'];

beforeAll(async () => {
  server = await startEmbeddingServer(64);
  onnxDir = mkdtempSync(join(tmpdir(), 'gsteer-onnx-'));
  // A fixed pseudo-random table: row k, column d = sin(7k + 3d + 1).
  const table = vocab.map((_, k) => Array.from({ length: 8 }, (_, d) => Math.sin(7 * k + 3 * d + 1)));
  writeFileSync(join(onnxDir, 'model.onnx'), embeddingLookupModel(table));
  writeFileSync(join(onnxDir, 'tokenizer.json'), JSON.stringify(wordPieceTokenizerJson(vocab)));
  writeFileSync(join(onnxDir, 'tokenizer_config.json'), JSON.stringify({ pad_token: '[PAD]' }));
});
afterAll(async () => {
  await server.close();
  rmSync(onnxDir, { recursive: true, force: true });
});

const cases: [string, () => Encoder][] = [
  ['embedded', () => createEncoder(EncoderSchema.parse({ kind: 'embedded', dim: 128, cacheSize: 0 }))],
  ['http', () => createEncoder(EncoderSchema.parse({ kind: 'http', baseUrl: server.baseUrl, batchSize: 2, cacheSize: 0, maxRetries: 0 }))],
  ['onnx', () => createEncoder(EncoderSchema.parse({ kind: 'onnx', path: onnxDir, batchSize: 2, cacheSize: 0 }))],
  ['embedded+cache', () => createEncoder(EncoderSchema.parse({ kind: 'embedded', dim: 128, cacheSize: 3 }))],
];
const texts = ['hotel budget', 'vegan food', 'kids museum', 'hotel night', 'hotel budget'];

describe.each(cases)('Encoder conformance: %s', (_, make) => {
  it('one unit vector per text, in order, of the declared dim', async () => {
    const enc = make();
    const vecs = await enc.embed(texts);
    expect(vecs).toHaveLength(texts.length);
    for (const v of vecs) {
      expect(l2Norm(v)).toBeCloseTo(1, 5);
      expect(v.length).toBe(enc.dim);
    }
    expect(cosine(vecs[0]!, vecs[4]!)).toBeCloseTo(1, 5); // same text
  });

  it('is deterministic and independent of batch composition', async () => {
    const enc = make();
    const all = await enc.embed(texts);
    for (let i = 0; i < texts.length; i++) {
      const [one] = await enc.embed([texts[i]!]);
      Array.from(one!).forEach((x, d) => expect(x).toBeCloseTo(all[i]![d]!, 6));
    }
    expect(await enc.embed([])).toEqual([]);
  });
});

describe('CachedEncoder', () => {
  it('serves repeats from the cache and evicts the least recently used', async () => {
    let calls = 0;
    const inner: Encoder = { name: 'count', dim: 1, embed: async (ts) => ts.map(() => (calls++, Float32Array.of(1))) };
    const c = new CachedEncoder(inner, 2);
    await c.embed(['a', 'b', 'a']); // a, b computed once each (the repeated a in one batch too)
    expect(calls).toBe(2);
    await c.embed(['a']); // hit; recency order now b, a
    await c.embed(['c']); // evicts b
    expect(calls).toBe(3);
    await c.embed(['a']); // still cached
    expect(calls).toBe(3);
    await c.embed(['b']); // was evicted
    expect(calls).toBe(4);
    expect(c.size).toBe(2);
  });
});
