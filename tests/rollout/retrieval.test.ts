// The two retrieval stages (rollout/retrieval.ts) on hand-made vectors, so the stages can be
// told apart: lexical/recency pre-selection decides what is examined, cosine decides the order.
import { describe, it, expect } from 'vitest';
import { preselect, searchSnapshot, contentWords } from '../../rollout/retrieval.ts';
import type { StoredMemory } from '../../rollout/user-store.ts';

const unit = (...xs: number[]) => {
  const n = Math.hypot(...xs);
  return Float32Array.from(xs.map((x) => x / n));
};
const mem = (i: number, value: string, emb: Float32Array, addedIn = 1): StoredMemory => ({
  id: `m${addedIn}-${i}`,
  name: `n${i}`,
  purpose: 'p',
  value,
  addedIn,
  encoder: 'test',
  embedding: emb,
});

describe('retrieval', () => {
  it('content words drop stop words and case', () => {
    expect([...contentWords('What is THE laptop budget of my lab?')]).toEqual(['laptop', 'budget', 'lab']);
  });

  it('pre-selects by overlap, then recency; a perfect cosine outside the candidates is never returned', () => {
    // m0: best vector but no word overlap and oldest -> not a candidate when candidates = 2.
    const ms = [
      mem(0, 'unrelated words', unit(1, 0, 0), 1),
      mem(1, 'laptop budget', unit(0.2, 1, 0), 2),
      mem(2, 'budget', unit(0.5, 0.5, 1), 1),
      mem(3, 'something recent', unit(0, 0, 1), 3),
    ];
    expect(preselect(ms, 'laptop budget', 2)).toEqual([1, 2]); // overlap 2, then 1
    expect(preselect(ms, 'laptop budget', 3)).toEqual([1, 2, 3]); // then the newest without overlap
    const q = unit(1, 0, 0);
    const r = searchSnapshot(ms, 'laptop budget', q, 'test', { candidates: 2, topK: 3, preselect: 'lexical' });
    expect(r.examined).toBe(2);
    // cosines: m2 = 0.5/sqrt(1.5) = 0.4082, m1 = 0.2/sqrt(1.04) = 0.1961
    expect(r.hits.map((h) => h.name)).toEqual(['n2', 'n1']);
    expect(r.hits[0]!.score).toBeCloseTo(0.5 / Math.sqrt(1.5), 6);
    expect(r.hits[1]!.score).toBeCloseTo(0.2 / Math.sqrt(1.04), 6);
    const all = searchSnapshot(ms, 'laptop budget', q, 'test', { candidates: 15, topK: 1 });
    expect(all).toEqual({ examined: 4, hits: [{ name: 'n0', purpose: 'p', value: 'unrelated words', score: 1 }] });
    // embedding pre-selection (the default, the paper's): the 2 candidates are the 2 best
    // cosines (n0 = 1, n2 = 0.4082; n1 = 0.1961 and n3 = 0 are not examined), whatever the words
    const e = searchSnapshot(ms, 'laptop budget', q, 'test', { candidates: 2, topK: 3 });
    expect(e.examined).toBe(2);
    expect(e.hits.map((h) => [h.name, Number(h.score.toFixed(4))])).toEqual([
      ['n0', 1],
      ['n2', 0.4082],
    ]);
  });

  it('drops non-positive cosines and refuses embeddings from another encoder', () => {
    const ms = [mem(0, 'a', unit(-1, 0)), mem(1, 'b', unit(0, 1))];
    expect(searchSnapshot(ms, 'x', unit(1, 0), 'test', { candidates: 15, topK: 3 }).hits).toEqual([]);
    expect(() => searchSnapshot(ms, 'x', unit(1, 0), 'other-encoder', { candidates: 15, topK: 3 })).toThrow(/embedded by test .* encoder is other-encoder/);
  });
});
