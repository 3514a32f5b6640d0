import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { HashedEncoder, fnv1a, features, hashedEmbedding } from '../../encoders/hashed.ts';
import { cosine } from '../../core/encoder.ts';
import { l2Norm } from '../../encoders/normalize.ts';

describe('fnv1a', () => {
  it('matches the published FNV-1a 32-bit test vectors', () => {
    // Reference values from the FNV spec's test suite (draft-eastlake-fnv): "" -> 0x811c9dc5,
    // "a" -> 0xe40c292c, "foobar" -> 0xbf9cf968.
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });
});

describe('features', () => {
  it('lowercases and yields unigrams, bigrams and boundary-marked char trigrams', () => {
    // "Big cat": words big, cat; bigram "big cat"; trigrams of "#big#" = #bi big ig#, of "#cat#" = #ca cat at#.
    const f = features('Big cat');
    expect([...f.keys()].sort()).toEqual(['w:big', 'w:cat', 'b:big cat', 'c:#bi', 'c:big', 'c:ig#', 'c:#ca', 'c:cat', 'c:at#'].sort());
    expect(features('the the').get('w:the')).toBe(2);
  });
});

describe('HashedEncoder', () => {
  const enc = new HashedEncoder(512);

  it('gives unit vectors, deterministically', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 80 }).filter((s) => /[\p{L}\p{N}]/u.test(s)),
        async (s) => {
          const [a] = await enc.embed([s]);
          const [b] = await new HashedEncoder(512).embed([s]);
          expect(l2Norm(a!)).toBeCloseTo(1, 5);
          expect(Array.from(a!)).toEqual(Array.from(b!));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('identical text has cosine 1, case-insensitively', async () => {
    const [a, b] = await enc.embed(['Travel budget for the trip', 'travel BUDGET for the trip']);
    expect(cosine(a!, b!)).toBeCloseTo(1, 6);
  });

  it('texts with no shared feature are near-orthogonal; related texts are closer than unrelated', async () => {
    const [a, b, c] = await enc.embed(['quantum chromodynamics lattice', 'vegan bakery sourdough', 'lattice quantum chromodynamics simulations']);
    // Disjoint feature sets only meet through bucket collisions (~|F_a||F_b|/dim signed terms).
    expect(Math.abs(cosine(a!, b!))).toBeLessThan(0.15);
    expect(cosine(a!, c!)).toBeGreaterThan(0.6);
  });

  it('empty text (no features) gives the zero vector, cosine 0 to everything', () => {
    const z = hashedEmbedding('  ?! ', 64);
    expect(l2Norm(z)).toBe(0);
  });

  it('a dense dim reproduces the hand-computed vector of a one-word text', () => {
    // "a": features w:a, c:#a# -> 2 features of tf 1, each weight 1 in its signed bucket,
    // normalized: two entries of magnitude 1/sqrt(2) (unless both land in one bucket).
    const dim = 1 << 16; // wide enough that the two features land in different buckets (checked below)
    const v = hashedEmbedding('a', dim);
    const nz = Array.from(v)
      .map((x, i) => [i, x] as const)
      .filter(([, x]) => x !== 0);
    const expected = ['w:a', 'c:#a#'].map((f) => {
      const h = fnv1a(f);
      return [(h >>> 1) % dim, (h & 1 ? -1 : 1) / Math.SQRT2] as const;
    });
    expect(nz.map(([i]) => i).sort()).toEqual(expected.map(([i]) => i).sort());
    for (const [i, x] of expected) expect(v[i]).toBeCloseTo(x, 6);
  });
});
