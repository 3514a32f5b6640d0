import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ancestors, backbone, childrenOf, eligible, findCycle, hopsFrom, isActive, parentsOf, topologicalOrders, type IegGraph } from '../../data/ieg.ts';
import { Rng } from '../../util/rng.ts';
import { InputError } from '../../util/errors.ts';

const graph = (ids: string[], edges: [string, string][], extra: Record<string, object> = {}): IegGraph => ({
  targets: ids.map((id) => ({ id, ...extra[id] })),
  edges,
});

// Trip-planning example: budget -> lodging -> neighborhood; dietary -> restaurant (late).
const trip = graph(
  ['budget', 'dates', 'lodging', 'neighborhood', 'dietary', 'restaurant'],
  [
    ['budget', 'lodging'],
    ['lodging', 'neighborhood'],
    ['dietary', 'restaurant'],
  ],
  { restaurant: { lateActivatable: true }, neighborhood: { essential: true }, dates: { essential: true } },
);

/** Independent reference: all permutations, keep those that respect every (transitive) constraint. */
function bruteOrders(ids: string[], edges: [string, string][]): string[][] {
  const perms = (xs: string[]): string[][] =>
    xs.length <= 1 ? [xs] : xs.flatMap((x, i) => perms([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
  return perms(ids).filter((p) => edges.every(([a, b]) => p.indexOf(a) < p.indexOf(b)));
}

const respects = (order: string[], edges: [string, string][]) =>
  edges.every(([a, b]) => !order.includes(a) || !order.includes(b) || order.indexOf(a) < order.indexOf(b));

/** Random DAG: n ids, edges only from lower to higher rank under a random labeling. */
const arbDag = fc
  .integer({ min: 1, max: 7 })
  .chain((n) =>
    fc.record({
      ids: fc.shuffledSubarray(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], { minLength: n, maxLength: n }),
      pairs: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 12 }),
    }),
  )
  .map(({ ids, pairs }) => {
    const edges = pairs.filter(([i, j]) => i < j).map(([i, j]) => [ids[i], ids[j]] as [string, string]);
    return { ids, edges, g: graph(ids, edges) };
  });

describe('IEG structure', () => {
  it('parents, children, ancestors on a worked example', () => {
    expect(parentsOf(trip, 'neighborhood')).toEqual(['lodging']);
    expect(childrenOf(trip, 'budget')).toEqual(['lodging']);
    expect([...ancestors(trip, 'neighborhood')]).toEqual(['budget', 'lodging']);
    expect([...ancestors(trip, 'budget')]).toEqual([]);
    // essentials: dates, neighborhood (+ its ancestors budget, lodging)
    expect([...backbone(trip)]).toEqual(['budget', 'dates', 'lodging', 'neighborhood']);
    // undirected hops from the backbone: dietary and restaurant are not connected to it
    const hops = hopsFrom(trip, ['neighborhood']);
    expect(Object.fromEntries(hops)).toEqual({ neighborhood: 0, lodging: 1, budget: 2 });
  });

  it('eligible = uncovered targets whose parents are all covered', () => {
    expect(eligible(trip, new Set())).toEqual(['budget', 'dates', 'dietary']);
    expect(eligible(trip, new Set(['budget', 'dietary']))).toEqual(['dates', 'lodging', 'restaurant']);
  });

  it('late activation: inactive until one parent is covered (method §7)', () => {
    const g = graph(
      ['x', 'y', 'z'],
      [
        ['x', 'z'],
        ['y', 'z'],
      ],
      { z: { lateActivatable: true } },
    );
    expect(isActive(g, 'z', new Set())).toBe(false);
    expect(isActive(g, 'z', new Set(['y']))).toBe(true); // one parent is enough
    expect(isActive(g, 'x', new Set())).toBe(true);
    expect(isActive(trip, 'lodging', new Set())).toBe(true); // not flagged: active from the start
    expect(isActive(trip, 'restaurant', new Set(['budget']))).toBe(false);
  });

  it('findCycle returns the cycle in edge direction, or null', () => {
    expect(findCycle(trip)).toBeNull();
    const c = findCycle({
      edges: [
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
        ['c', 'd'],
      ],
    });
    expect(c).toEqual(['a', 'b', 'c']);
    expect(findCycle({ edges: [['q', 'q']] })).toEqual(['q']);
  });
});

describe('topological orders', () => {
  it('all orders of a worked example (counted by hand)', () => {
    // subset {budget, lodging, dates}: budget < lodging, dates free -> 3 orders
    const all = topologicalOrders(trip, ['lodging', 'dates', 'budget'], { all: true });
    expect(all).toEqual([
      ['budget', 'dates', 'lodging'],
      ['budget', 'lodging', 'dates'],
      ['dates', 'budget', 'lodging'],
    ]);
  });

  it('a subset keeps constraints through left-out ancestors', () => {
    // budget -> lodging -> neighborhood; leaving lodging out still puts budget first
    expect(topologicalOrders(trip, ['neighborhood', 'budget'], { all: true })).toEqual([['budget', 'neighborhood']]);
  });

  it('throws on a cycle and when {all} would exceed max', () => {
    const cyc = graph(
      ['a', 'b'],
      [
        ['a', 'b'],
        ['b', 'a'],
      ],
    );
    expect(() => topologicalOrders(cyc, undefined, { all: true })).toThrow(/cycle a -> b -> a/);
    const free = graph(['a', 'b', 'c', 'd'], []);
    expect(() => topologicalOrders(free, undefined, { all: true, max: 10 })).toThrow(InputError);
  });

  it('property: {all} equals the brute-force set and every order respects every edge', () => {
    fc.assert(
      fc.property(arbDag, ({ ids, edges, g }) => {
        const all = topologicalOrders(g, undefined, { all: true });
        for (const o of all) expect(respects(o, edges)).toBe(true);
        const key = (os: string[][]) => os.map((o) => o.join(',')).sort();
        expect(key(all)).toEqual(key(bruteOrders(ids, edges)));
      }),
      { numRuns: 150 },
    );
  });

  it('property: sampled orders are valid, distinct, min(k, total) many, and deterministic per seed', () => {
    fc.assert(
      fc.property(arbDag, fc.integer({ min: 1, max: 8 }), fc.nat(), ({ ids, edges, g }, k, seed) => {
        const a = topologicalOrders(g, undefined, { k, rng: new Rng(seed) });
        const b = topologicalOrders(g, undefined, { k, rng: new Rng(seed) });
        expect(a).toEqual(b);
        expect(new Set(a.map((o) => o.join(','))).size).toBe(a.length);
        expect(a.length).toBe(Math.min(k, bruteOrders(ids, edges).length));
        for (const o of a) {
          expect([...o].sort()).toEqual([...ids].sort());
          expect(respects(o, edges)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('sampling is uniform over orders, not over eligible choices', () => {
    // a -> b, c free: orders abc, acb, cab. Picking uniformly among eligible nodes would
    // give cab 1/2; uniform over orders gives 1/3 each.
    const g = graph(['a', 'b', 'c'], [['a', 'b']]);
    const counts = new Map<string, number>();
    const n = 3000;
    for (let s = 0; s < n; s++) {
      const [o] = topologicalOrders(g, undefined, { k: 1, rng: Rng.derive(7, s) });
      const key = (o ?? []).join('');
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(['abc', 'acb', 'cab']);
    for (const c of counts.values()) expect(Math.abs(c / n - 1 / 3)).toBeLessThan(0.04);
  });

  it('property: ancestors are closed under parents and never contain the node', () => {
    fc.assert(
      fc.property(arbDag, ({ ids, g }) => {
        for (const id of ids) {
          const anc = ancestors(g, id);
          expect(anc.has(id)).toBe(false);
          for (const p of parentsOf(g, id)) expect(anc.has(p)).toBe(true);
          for (const a of anc) for (const p of parentsOf(g, a)) expect(anc.has(p)).toBe(true);
        }
        expect(findCycle(g)).toBeNull();
      }),
      { numRuns: 150 },
    );
  });

  it('property: a back edge creates a cycle that findCycle reports along real edges', () => {
    fc.assert(
      fc.property(arbDag, ({ edges }) => {
        fc.pre(edges.length > 0);
        const [a, b] = edges[0] as [string, string];
        const withBack: [string, string][] = [...edges, [b, a]];
        const c = findCycle({ edges: withBack });
        expect(c).not.toBeNull();
        const cyc = c as string[];
        const has = (x: string, y: string) => withBack.some(([p, q]) => p === x && q === y);
        cyc.forEach((u, i) => expect(has(u, cyc[(i + 1) % cyc.length] as string)).toBe(true));
      }),
      { numRuns: 150 },
    );
  });

  it('property: eligible targets have every parent covered', () => {
    fc.assert(
      fc.property(arbDag, fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), ({ ids, g }, mask) => {
        const covered = new Set(ids.filter((_, i) => mask[i]));
        for (const e of eligible(g, covered)) {
          expect(covered.has(e)).toBe(false);
          for (const p of parentsOf(g, e)) expect(covered.has(p)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });
});
