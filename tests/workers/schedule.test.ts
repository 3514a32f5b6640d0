// The update schedule and the policy-version rule (workers/schedule.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrpoSchema } from '../../configs/schema.ts';
import type { Instance } from '../../data/schema.ts';
import { rolloutSeed, updateCount, updateSchedule, versionFor } from '../../workers/schedule.ts';

const inst = (n: number, split = 'train'): Instance => ({
  id: `i${n}`,
  userId: `u${n % 3}`,
  taskId: 't',
  split,
  query: 'q',
  profile: '',
  persona: [],
  targets: [],
  edges: [],
});

describe('updateSchedule', () => {
  it('each pass visits every train instance exactly once, test instances never', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 4 }), fc.integer(), (n, passes, gpu, seed) => {
        const instances = [...Array.from({ length: n }, (_, k) => inst(k)), inst(99, 'test')];
        const grpo = GrpoSchema.parse({ passes, groupsPerUpdate: gpu });
        const plan = updateSchedule(instances, grpo, seed);
        const flat = plan.flat().map((g) => g.instanceId);
        expect(flat).toHaveLength(n * passes);
        for (let p = 0; p < passes; p++) expect(new Set(flat.slice(p * n, (p + 1) * n)).size).toBe(n);
        expect(flat).not.toContain('i99');
        expect(plan.every((u) => u.length <= gpu && u.length > 0)).toBe(true);
        expect(plan.length).toBe(Math.ceil((n * passes) / gpu));
      }),
      { numRuns: 60 },
    );
  });

  it('is a pure function of the seed; passes are shuffled independently', () => {
    const instances = Array.from({ length: 20 }, (_, k) => inst(k));
    const grpo = GrpoSchema.parse({ passes: 2 });
    const a = updateSchedule(instances, grpo, 42)
      .flat()
      .map((g) => g.instanceId);
    expect(
      updateSchedule(instances, grpo, 42)
        .flat()
        .map((g) => g.instanceId),
    ).toEqual(a);
    expect(
      updateSchedule(instances, grpo, 43)
        .flat()
        .map((g) => g.instanceId),
    ).not.toEqual(a);
    expect(a.slice(0, 20)).not.toEqual(a.slice(20)); // 1 / 20! chance of a false failure
  });

  it('grpo.trainIds: each pass visits exactly that subset of the train split', () => {
    const instances = [...Array.from({ length: 10 }, (_, k) => inst(k)), inst(99, 'test')];
    const grpo = GrpoSchema.parse({ passes: 3, trainIds: ['i7', 'i2', 'i4'] });
    const flat = updateSchedule(instances, grpo, 5)
      .flat()
      .map((g) => g.instanceId);
    expect(flat).toHaveLength(9);
    for (let p = 0; p < 3; p++) expect([...flat.slice(p * 3, p * 3 + 3)].sort()).toEqual(['i2', 'i4', 'i7']);
  });

  it('maxUpdates caps the plan', () => {
    const grpo = GrpoSchema.parse({ passes: 2, maxUpdates: 3 });
    expect(
      updateSchedule(
        Array.from({ length: 10 }, (_, k) => inst(k)),
        grpo,
        1,
      ),
    ).toHaveLength(3);
  });
});

describe('updateCount', () => {
  it('counts groups across passes, not per pass: 5 instances x 2 passes / 2 per update = 5 updates', () => {
    const grpo = GrpoSchema.parse({ passes: 2, groupsPerUpdate: 2 });
    expect(updateCount(5, grpo)).toBe(5); // ceil(10 / 2); per-pass rounding would give 2 x ceil(5 / 2) = 6
    expect(
      updateSchedule(
        Array.from({ length: 5 }, (_, k) => inst(k)),
        grpo,
        3,
      ),
    ).toHaveLength(5);
  });
  it('the paper run: 105 instances, 2 passes, 1 group per update = 210; maxUpdates caps it', () => {
    expect(updateCount(105, GrpoSchema.parse({ passes: 2, groupsPerUpdate: 1 }))).toBe(210);
    expect(updateCount(105, GrpoSchema.parse({ passes: 2, groupsPerUpdate: 1, maxUpdates: 5 }))).toBe(5);
    expect(updateCount(3, GrpoSchema.parse({ passes: 1, groupsPerUpdate: 2, maxUpdates: 50 }))).toBe(2); // ceil(3 / 2), below the cap
  });
  it('equals the length of the plan the controller runs', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 5 }),
        fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
        (n, passes, gpu, cap) => {
          const grpo = GrpoSchema.parse({ passes, groupsPerUpdate: gpu, maxUpdates: cap });
          expect(
            updateSchedule(
              Array.from({ length: n }, (_, k) => inst(k)),
              grpo,
              7,
            ),
          ).toHaveLength(updateCount(n, grpo));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('versionFor', () => {
  it('on-policy (lag 0): update s samples from version s - 1', () => {
    expect([1, 2, 3].map((s) => versionFor(s, 0))).toEqual([0, 1, 2]);
  });
  it('lag L: exactly L versions behind, never below 0', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 0, max: 4 }), (s, L) => {
        const v = versionFor(s, L);
        expect(v).toBe(Math.max(0, s - 1 - L));
        expect(s - 1 - v).toBeLessThanOrEqual(L);
      }),
    );
  });
});

describe('rolloutSeed', () => {
  it('differs across (step, group, index) and is a non-negative int32', () => {
    const seeds = new Set<number>();
    for (let s = 1; s <= 10; s++) for (let g = 0; g < 3; g++) for (let i = 0; i < 4; i++) seeds.add(rolloutSeed(42, s, g, i));
    expect(seeds.size).toBe(120);
    for (const x of seeds) expect(Number.isInteger(x) && x >= 0 && x < 2 ** 31).toBe(true);
  });
});
