// The scenario knobs (method §7): memory-hit samples per order, stopping points per sample,
// and late activation switched off as a scenario of its own.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { HashedEncoder } from '../../encoders/hashed.ts';
import { OfflineMemory } from '../../data/sft/memory.ts';
import { buildInstance, type BuildOptions } from '../../data/sft/build.ts';
import { arbInstance, violations } from './check.ts';
import type { Instance } from '../../data/schema.ts';

const encoder = new HashedEncoder(128);
const base = (memory: OfflineMemory, seed: number): BuildOptions => ({ seed, optionalRatios: [0, 1], ordersPerSubgraph: 2, maxTurns: 12, topK: 3, memory });

describe('scenario knobs', () => {
  it('more samples keep the one-sample trajectories as they were and add distinct ones that obey the rules', async () => {
    await fc.assert(
      fc.asyncProperty(arbInstance('a', 'u'), fc.integer(), async (a, seed) => {
        const memory = await OfflineMemory.build([a], encoder);
        const one = await buildInstance(a, base(memory, seed));
        const many = await buildInstance(a, { ...base(memory, seed), memorySamples: 3, stopPoints: 2, lateActivation: 'vary' });
        const byId = new Map(many.map((t) => [t.id, t]));
        expect(byId.size).toBe(many.length); // ids are unique
        for (const t of one) expect(JSON.stringify(byId.get(t.id))).toBe(JSON.stringify(t));
        for (const t of many) {
          const g = t.id.endsWith('/late-off') ? { ...a, targets: a.targets.map((x) => ({ ...x, lateActivatable: false })) } : a;
          expect(violations(g, t, { maxTurns: 12, topK: 3 })).toEqual([]);
        }
        // per (subgraph, order, late variant): at most 3 distinct hit sets per random kind
        const groups = new Map<string, Set<string>>();
        for (const t of many.filter((x) => x.scenario.kind === 'memory_mixed')) {
          const key = t.id.replace(/\/m\d+/, '');
          const set = groups.get(key) ?? new Set();
          set.add(t.scenario.memoryHits.join(','));
          groups.set(key, set);
        }
        for (const [key, set] of groups) {
          expect(set.size).toBeLessThanOrEqual(3);
          // one trajectory per distinct hit set: repeats were skipped
          expect(many.filter((x) => x.scenario.kind === 'memory_mixed' && x.id.replace(/\/m\d+/, '') === key).length).toBe(set.size);
        }
        // early_stop: distinct stopping points per sample, at most 2
        const stops = new Map<string, number[]>();
        for (const t of many.filter((x) => x.scenario.kind === 'early_stop')) {
          const key = t.id.replace(/\/p\d+/, '');
          stops.set(key, [...(stops.get(key) ?? []), t.scenario.stopAfter as number]);
        }
        for (const s of stops.values()) expect(new Set(s).size).toBe(s.length);
        for (const s of stops.values()) expect(s.length).toBeLessThanOrEqual(2);
      }),
      { numRuns: 25 },
    );
  });

  it('late-off: the late target has a slot from the first turn (by hand)', async () => {
    const t = (id: string, essential: boolean, lateActivatable = false) => ({
      id,
      description: `about ${id}`,
      seedQuestion: `${id}?`,
      seedAnswer: `my ${id}`,
      weight: 1,
      essential,
      lateActivatable,
    });
    const inst: Instance = {
      id: 'i',
      userId: 'u',
      taskId: 'k',
      split: 'train',
      query: 'q',
      profile: '',
      persona: [],
      targets: [t('p', true), t('c', false, true)],
      edges: [['p', 'c']],
    };
    const memory = await OfflineMemory.build([inst], encoder);
    const ts = await buildInstance(inst, { ...base(memory, 1), optionalRatios: [1], kinds: ['dialogue'], lateActivation: 'vary' });
    expect(ts.map((x) => x.id)).toEqual(['i/s0/o0/dialogue', 'i/s0/o0/dialogue/late-off']);
    const firstState = (k: number) => ts[k]!.steps[0]!.turn.state.map((s) => s.name);
    expect(firstState(0)).toEqual(['p']); // c waits for its parent
    expect(firstState(1)).toEqual(['p', 'c']); // active from the start
  });
});
