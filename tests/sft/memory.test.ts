// Offline SFT memory (paper "Offline SFT state"): hits first, then the same user's most
// similar memories from OTHER instances; at most topK results from `candidates` examined.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { InstanceSchema, type Instance } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import { cosine } from '../../core/encoder.ts';
import { templateRefine } from '../../data/sft/teacher.ts';

const enc = new HashedEncoder(256);
const inst = (id: string, userId: string, facts: string[]): Instance =>
  InstanceSchema.parse({
    id,
    userId,
    taskId: id,
    split: 'train',
    query: `q ${id}`,
    targets: facts.map((f, i) => ({ id: `${id}-${i}`, description: f, seedQuestion: `${f}?`, seedAnswer: `${f} answer`, weight: 1 })),
  });

describe('OfflineMemory.retrieve', () => {
  const a = inst('a', 'u', ['travel budget', 'dietary needs', 'trip dates']);
  const b = inst('b', 'u', ['laptop budget', 'operating system', 'screen size', 'battery life']);
  const c = inst('c', 'v', ['travel budget for another user']);

  it('returns the hits, then the other instances of the same user by similarity; never another user or a non-hit of this instance', async () => {
    const mem = await OfflineMemory.build([a, b, c], enc);
    const r = await mem.retrieve(a, 'travel budget', [a.targets[2]!]);
    expect(r.length).toBe(3);
    expect(r[0]!.name).toBe('a-2');
    const names = r.slice(1).map((x) => x.name);
    for (const n of names) expect(n.startsWith('b-')).toBe(true);
    // The fill is the most similar b memories: rank all of b by hand with the same encoder.
    const [q] = await enc.embed(['travel budget']);
    const texts = b.targets.map((t) => `${t.id} ${t.description} ${t.seedAnswer}`);
    const vs = await enc.embed(texts);
    const ranked = b.targets
      .map((t, i) => ({ id: t.id, s: cosine(q!, vs[i]!) }))
      .sort((x, y) => y.s - x.s)
      .map((x) => x.id);
    expect(names).toEqual(ranked.slice(0, 2));
  });

  it('a miss returns only other-instance memories; at most topK, all from the same user', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 4 }),
        async (query, cands, topK) => {
          const mem = await OfflineMemory.build([a, b, c], enc, cands, topK);
          const r = await mem.retrieve(a, query, []);
          expect(r.length).toBe(Math.min(topK, cands, b.targets.length));
          for (const x of r) expect(x.name.startsWith('b-')).toBe(true);
          for (let i = 1; i < r.length; i++) expect(r[i - 1]!.score).toBeGreaterThanOrEqual(r[i]!.score);
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe('template teacher', () => {
  it('phrases each covered slot as a constraint after the query, in slot order', () => {
    const slots = [
      { name: 'budget', purpose: 'spending limit', status: 'covered' as const, value: 'under 1200 EUR', source: 'dialogue' as const },
      { name: 'os', purpose: 'operating system', status: 'uncovered' as const, value: '', source: 'memory' as const },
      { name: 'use', purpose: 'main workloads', status: 'covered' as const, value: 'video\nediting', source: 'memory' as const },
    ];
    expect(templateRefine({ query: 'Find a laptop.', profile: '', slots })).toBe(
      'Find a laptop. Constraints from the user: spending limit: under 1200 EUR; main workloads: video editing.',
    );
    expect(templateRefine({ query: ' Find  a laptop. ', profile: '', slots: [slots[1]!] })).toBe('Find a laptop.');
  });
});
