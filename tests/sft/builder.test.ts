// Property tests over every trajectory the SFT builder emits (method §7), for random IEGs.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import { buildInstance, type BuildOptions } from '../../data/sft/build.ts';
import { subgraphs } from '../../data/sft/subgraphs.ts';
import { Rng } from '../../util/rng.ts';
import { arbInstance, violations } from './check.ts';

const encoder = new HashedEncoder(128);
const opts = (memory: OfflineMemory, seed: number, maxTurns = 12): BuildOptions => ({
  seed,
  optionalRatios: [0, 0.5, 1],
  ordersPerSubgraph: 2,
  maxTurns,
  topK: 3,
  memory,
});

describe('scaffolded trajectories on random IEGs', () => {
  it('every trajectory obeys the method §7 rules', async () => {
    await fc.assert(
      fc.asyncProperty(arbInstance('a', 'u'), arbInstance('b', 'u'), fc.integer(), fc.integer({ min: 2, max: 12 }), async (a, b, seed, maxTurns) => {
        const memory = await OfflineMemory.build([a, b], encoder);
        const ts = await buildInstance(a, opts(memory, seed, maxTurns));
        expect(ts.length).toBeGreaterThan(0);
        for (const t of ts) expect(violations(a, t, { maxTurns, topK: 3 })).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('the same seed gives the same trajectories, whatever the instance order in memory', async () => {
    await fc.assert(
      fc.asyncProperty(arbInstance('a', 'u'), arbInstance('b', 'u'), fc.integer(), async (a, b, seed) => {
        const memory = await OfflineMemory.build([a, b], encoder);
        const x = await buildInstance(a, opts(memory, seed));
        const y = await buildInstance(a, opts(await OfflineMemory.build([b, a], encoder), seed));
        expect(JSON.stringify(y)).toBe(JSON.stringify(x));
      }),
      { numRuns: 40 },
    );
  });

  it('essential targets are always in every subgraph, ratio 1 holds every target, ratio 0 is the backbone', () => {
    fc.assert(
      fc.property(arbInstance('a', 'u'), fc.integer(), (a, seed) => {
        const subs = subgraphs(a, [0, 0.5, 1], new Rng(seed));
        for (const s of subs) for (const t of a.targets) if (t.essential) expect(s.ids).toContain(t.id);
        expect(subs.at(-1)!.ids.length).toBe(a.targets.length);
        // Hand-derived backbone: essentials plus every target with an essential descendant.
        const reaches = (from: string, to: string): boolean => from === to || a.edges.some(([p, c]) => p === from && reaches(c, to));
        const core = a.targets.filter((t) => a.targets.some((e) => e.essential && reaches(t.id, e.id))).map((t) => t.id);
        if (core.length) expect(subs[0]!.ids).toEqual(core);
      }),
      { numRuns: 200 },
    );
  });

  it('ratio 0.5 adds the optional target nearest the backbone first', () => {
    // e -> o1 -> o2: o1 is 1 hop from the backbone {e}, o2 is 2 hops, x is unreachable; round(0.5 * 3) = 2.
    const g = {
      targets: [{ id: 'e', essential: true }, { id: 'o2' }, { id: 'x' }, { id: 'o1' }],
      edges: [
        ['e', 'o1'],
        ['o1', 'o2'],
      ] as [string, string][],
    };
    for (let seed = 0; seed < 20; seed++) {
      const subs = subgraphs(g, [0, 0.5, 1], new Rng(seed));
      expect(subs.map((s) => s.ids)).toEqual([['e'], ['e', 'o2', 'o1'], ['e', 'o2', 'x', 'o1']]);
    }
  });
});
