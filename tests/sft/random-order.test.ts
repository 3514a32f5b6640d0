// The random-order SFT ablation (sft.order = random; paper Table 3): same target sets and
// scenarios, random target orders, acquisitions that ignore the IEG. It must violate the IEG
// order (a target acted on, or scheduled, before its parent) where the default builder never
// does, on the same random IEGs and seeds.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildInstance, type BuildOptions } from '../../data/sft/build.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import { InstanceSchema } from '../../data/schema.ts';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { arbInstance, violations } from './check.ts';

const encoder = new HashedEncoder(128);
const opts = (memory: OfflineMemory, seed: number, order: 'ieg' | 'random'): BuildOptions => ({
  seed,
  optionalRatios: [0, 0.5, 1],
  ordersPerSubgraph: 2,
  maxTurns: 12,
  topK: 3,
  memory,
  order,
});
const iegViolations = (v: string[]) => v.filter((x) => /before its parent/.test(x));

describe('sft.order = random', () => {
  it('a chain a -> b -> c: random orders act on children before their parents; the default never does', async () => {
    const inst = InstanceSchema.parse({
      id: 'c',
      userId: 'u',
      taskId: 't',
      split: 'train',
      query: 'research question',
      profile: '',
      targets: ['a', 'b', 'c'].map((id) => ({
        id,
        description: `factor ${id}`,
        seedQuestion: `What about ${id}?`,
        seedAnswer: `answer ${id}`,
        weight: 1,
        essential: true,
      })),
      edges: [
        ['a', 'b'],
        ['b', 'c'],
      ],
    });
    const memory = await OfflineMemory.build([inst], encoder);
    let random = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await buildInstance(inst, opts(memory, seed, 'random'));
      const d = await buildInstance(inst, opts(memory, seed, 'ieg'));
      // the same target sets and scenario kinds (a chain has one prioritized order per subgraph, random draws two)
      const kinds = (ts: typeof r) => [...new Set(ts.map((t) => JSON.stringify([[...t.subgraph].sort(), t.scenario.kind])))].sort();
      expect(kinds(r)).toEqual(kinds(d));
      for (const t of d) expect(iegViolations(violations(inst, t, { maxTurns: 12, topK: 3 }))).toEqual([]);
      random += r.filter((t) => iegViolations(violations(inst, t, { maxTurns: 12, topK: 3 })).length > 0).length;
    }
    expect(random).toBeGreaterThan(0);
  });

  it('on random IEGs with an edge between non-late targets, some random-order trajectory breaks the IEG order and no default one does', async () => {
    let broken = 0;
    await fc.assert(
      fc.asyncProperty(arbInstance('a', 'u'), fc.integer(), async (a, seed) => {
        const memory = await OfflineMemory.build([a], encoder);
        for (const t of await buildInstance(a, opts(memory, seed, 'ieg'))) expect(iegViolations(violations(a, t, { maxTurns: 12, topK: 3 }))).toEqual([]);
        for (const t of await buildInstance(a, opts(memory, seed, 'random')))
          broken += iegViolations(violations(a, t, { maxTurns: 12, topK: 3 })).length > 0 ? 1 : 0;
      }),
      { numRuns: 60, seed: 7 },
    );
    expect(broken).toBeGreaterThan(0);
  });
});
