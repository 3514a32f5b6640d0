// method §8 metrics: golden numbers worked by hand from fixed vectors (TableEncoder), and
// properties of pooling. Vectors (3-d, unit):
//   e1 = (1,0,0)  e2 = (0,1,0)  e3 = (0,0,1)
//   fa1 = (0.6, 0.8, 0)            cos to e1 0.6, e2 0.8, e3 0
//   fa2 = (0.5, 0, -sqrt(0.75))    cos to e1 0.5, e2 0,   e3 -0.866
// Instance A (seen): targets t1=e1 (w 3, essential), t2=e2 (w 1), t3=e3 (w 2, essential);
//   factors fa1, fa2; asks 3, retrieves 1.
//   target best: t1 max(0.6, 0.5) = 0.6, t2 0.8, t3 max(0, -0.866) = 0
//   factor best: fa1 0.8, fa2 0.5
// Instance B (unseen_user): targets u1=e1 (w 1, essential), u2=e2 (w 1); invalid episode
//   (no q*, no factors); asks 2, retrieves 1.
// Instance C (seen): target v1=e2 (w 4, essential); factors fc1=e2 (cos 1), fc2=e1 (cos 0);
//   asks 1, retrieves 0.
// At tau = 0.55: covered = {t1, t2} + {} + {v1} = 3 of 6 targets; matched factors =
//   {fa1} + {} + {fc1} = 2 of 4. P = 0.5, R = 0.5, F1 = 0.5.
//   WCov = (3+1 + 0 + 4) / (6 + 2 + 4) = 8/12; E-WCov = (3 + 0 + 4) / (5 + 1 + 4) = 7/10.
//   mean Ask = 6/3 = 2, mean Retrieve = 2/3.
//   seen (A, C): R = 3/4, P = 2/4, F1 = 2*0.5*0.75/1.25 = 0.6, WCov = 8/10, E-WCov = 7/9.
//   unseen_user (B): R = 0, P = null (no factor at all), F1 = null, WCov = 0, E-WCov = 0.
// At tau = 0.45: fa2 also matches (0.5 >= 0.45); coverage unchanged (t3's best is 0):
//   P = 3/4. At tau = 0.65: t1 (0.6) drops: covered 2 of 6, WCov = (1 + 4)/12, P = 2/4.
// Averaging per instance instead would give WCov mean(4/6, 0, 1) = 0.5556, not 0.6667.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { InstanceSchema, type Instance } from '../../data/schema.ts';
import { addCounts, colBest, episodeCounts, metricsOf, pooledMetrics, rowBest, type EpisodeSims } from '../../eval/metrics.ts';
import { thresholdResult } from '../../eval/report.ts';
import { scoreEpisode, toSims, type ScoredEpisode } from '../../eval/score.ts';
import type { FactorExtractor } from '../../eval/extractor.ts';
import { TableEncoder } from '../reward/fake-encoder.ts';

const r75 = Math.sqrt(0.75);
const enc = new TableEncoder({
  'budget limit': [1, 0, 0],
  'travel frequency': [0, 1, 0],
  'diet needs': [0, 0, 1],
  'B one': [1, 0, 0],
  'B two': [0, 1, 0],
  'C only': [0, 1, 0],
  fa1: [0.6, 0.8, 0],
  fa2: [0.5, 0, -r75],
  fc1: [0, 1, 0],
  fc2: [1, 0, 0],
});

const inst = (id: string, userId: string, targets: [string, string, number, boolean][]): Instance =>
  InstanceSchema.parse({
    id,
    userId,
    taskId: 'task',
    split: 'test',
    query: 'q',
    targets: targets.map(([tid, description, weight, essential]) => ({ id: tid, description, seedQuestion: '?', seedAnswer: 'a', weight, essential })),
  });
const A = inst('A', 'ua', [
  ['t1', 'budget limit', 3, true],
  ['t2', 'travel frequency', 1, false],
  ['t3', 'diet needs', 2, true],
]);
const B = inst('B', 'ub', [
  ['u1', 'B one', 1, true],
  ['u2', 'B two', 1, false],
]);
const C = inst('C', 'uc', [['v1', 'C only', 4, true]]);

/** Test double: the factors each q* is declared to contain. */
const table: FactorExtractor = {
  name: 'table',
  async extract(q) {
    return ({ qA: ['fa1', 'fa2'], qC: ['fc1', 'fc2'] } as Record<string, string[]>)[q] ?? [];
  },
};

async function scored(): Promise<ScoredEpisode[]> {
  return [
    await scoreEpisode({ instanceId: 'A', termination: 'stop', refinedQuery: 'qA', askCount: 3, retrieveCount: 1 }, A, 'seen', table, enc),
    await scoreEpisode({ instanceId: 'B', termination: 'invalid', refinedQuery: null, askCount: 2, retrieveCount: 1 }, B, 'unseen_user', table, enc),
    await scoreEpisode({ instanceId: 'C', termination: 'stop', refinedQuery: 'qC', askCount: 1, retrieveCount: 0 }, C, 'seen', table, enc),
  ];
}

describe('eval metrics (method §8), golden by hand', () => {
  it('best cosines per target and per factor', async () => {
    const [a, b, c] = await scored();
    expect(a!.targets.map((t) => t.bestCosine)).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6), expect.closeTo(0, 6)]);
    expect(a!.targets.map((t) => t.bestFactor)).toEqual(['fa1', 'fa1', 'fa1']); // t3: 0 (fa1) beats -0.866 (fa2)
    expect(a!.factors.map((f) => [f.text, f.bestTarget])).toEqual([
      ['fa1', 't2'],
      ['fa2', 't1'],
    ]);
    expect(a!.factors[1]!.bestCosine).toBeCloseTo(0.5, 6);
    expect(b!.factors).toEqual([]);
    expect(b!.targets.every((t) => t.bestCosine === null && t.bestFactor === null)).toBe(true);
    expect(c!.factors.map((f) => f.bestCosine)).toEqual([expect.closeTo(1, 6), expect.closeTo(0, 6)]);
  });

  it('pooled overall and per group at 0.55', async () => {
    const r = thresholdResult(await scored(), 0.55);
    expect(r.overall).toMatchObject({
      episodes: 3,
      stopped: 2,
      targets: 6,
      coveredTargets: 3,
      factors: 4,
      matchedFactors: 2,
      weight: 12,
      coveredWeight: 8,
      essentialWeight: 10,
      essentialCoveredWeight: 7,
    });
    expect(r.overall.precision).toBeCloseTo(0.5, 12);
    expect(r.overall.recall).toBeCloseTo(0.5, 12);
    expect(r.overall.f1).toBeCloseTo(0.5, 12);
    expect(r.overall.wcov).toBeCloseTo(8 / 12, 12);
    expect(r.overall.ewcov).toBeCloseTo(0.7, 12);
    expect(r.overall.meanAsk).toBeCloseTo(2, 12);
    expect(r.overall.meanRetrieve).toBeCloseTo(2 / 3, 12);
    const seen = r.groups.seen;
    expect([seen.recall, seen.precision, seen.f1, seen.wcov, seen.ewcov]).toEqual([0.75, 0.5, expect.closeTo(0.6, 12), 0.8, expect.closeTo(7 / 9, 12)]);
    expect(r.groups.unseen_user).toMatchObject({ recall: 0, precision: null, f1: null, wcov: 0, ewcov: 0, meanAsk: 2, meanRetrieve: 1 });
    expect(r.groups.unseen_task).toMatchObject({ episodes: 0, recall: null, precision: null, wcov: null, meanAsk: null });
  });

  it('the threshold moves coverage and precision as worked out', async () => {
    const s = await scored();
    const lo = thresholdResult(s, 0.45).overall;
    expect([lo.matchedFactors, lo.coveredTargets]).toEqual([3, 3]);
    const hi = thresholdResult(s, 0.65).overall;
    expect([hi.matchedFactors, hi.coveredTargets, hi.coveredWeight]).toEqual([2, 2, 5]);
    expect(hi.wcov).toBeCloseTo(5 / 12, 12);
  });

  it('pooling is not averaging: the example above differs', async () => {
    const s = await scored();
    const pooled = pooledMetrics(s.map(toSims), 0.55).wcov as number;
    const perInstance = s.map((e) => pooledMetrics([toSims(e)], 0.55).wcov as number);
    const averaged = perInstance.reduce((a, b) => a + b, 0) / perInstance.length;
    expect(pooled).toBeCloseTo(2 / 3, 12);
    expect(averaged).toBeCloseTo((4 / 6 + 0 + 1) / 3, 12);
    expect(Math.abs(pooled - averaged)).toBeGreaterThan(0.1);
  });

  it('rowBest / colBest on a [2, 3] matrix', () => {
    expect(
      rowBest([
        [0.1, 0.9, 0.3],
        [0.2, 0.0, 0.4],
      ]),
    ).toEqual([0.9, 0.4]);
    expect(
      colBest(
        [
          [0.1, 0.9, 0.3],
          [0.2, 0.0, 0.4],
        ],
        3,
      ),
    ).toEqual([0.2, 0.9, 0.4]);
    expect(rowBest([[]])).toEqual([null]);
  });
});

// Random episodes for the properties.
const cos = fc.double({ min: -1, max: 1, noNaN: true });
const episode: fc.Arbitrary<EpisodeSims> = fc.record({
  targets: fc.array(fc.record({ weight: fc.double({ min: 0, max: 5, noNaN: true }), essential: fc.boolean(), best: fc.option(cos, { nil: null }) }), {
    minLength: 1,
    maxLength: 6,
  }),
  factorBest: fc.array(cos, { maxLength: 6 }),
  askCount: fc.nat(12),
  retrieveCount: fc.nat(12),
  stopped: fc.boolean(),
});

describe('eval metrics, properties', () => {
  it('every ratio is in [0, 1] or null; pooling is order-free and additive', () => {
    fc.assert(
      fc.property(fc.array(episode, { minLength: 1, maxLength: 8 }), cos, (eps, tau) => {
        const m = pooledMetrics(eps, tau);
        for (const k of ['precision', 'recall', 'f1', 'wcov', 'ewcov'] as const) {
          const x = m[k];
          if (x !== null) expect(x >= -1e-12 && x <= 1 + 1e-12).toBe(true);
        }
        const rev = pooledMetrics([...eps].reverse(), tau);
        expect(rev.coveredTargets).toBe(m.coveredTargets);
        expect(rev.coveredWeight).toBeCloseTo(m.coveredWeight, 9);
        const split = Math.floor(eps.length / 2);
        const sum = addCounts(pooledMetrics(eps.slice(0, split), tau), pooledMetrics(eps.slice(split), tau));
        expect(metricsOf(sum).matchedFactors).toBe(m.matchedFactors);
      }),
    );
  });

  it('recall, precision, WCov and E-WCov never rise with a stricter threshold', () => {
    fc.assert(
      fc.property(fc.array(episode, { minLength: 1, maxLength: 6 }), cos, cos, (eps, a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const L = pooledMetrics(eps, lo);
        const H = pooledMetrics(eps, hi);
        expect(H.coveredTargets).toBeLessThanOrEqual(L.coveredTargets);
        expect(H.matchedFactors).toBeLessThanOrEqual(L.matchedFactors);
        expect(H.coveredWeight).toBeLessThanOrEqual(L.coveredWeight + 1e-12);
        expect(H.essentialCoveredWeight).toBeLessThanOrEqual(L.essentialCoveredWeight + 1e-12);
      }),
    );
  });

  it('pooled WCov is the per-episode WCov averaged with total-weight weights, not the plain mean', () => {
    fc.assert(
      fc.property(fc.array(episode, { minLength: 1, maxLength: 6 }), cos, (eps, tau) => {
        const m = pooledMetrics(eps, tau);
        // per-episode WCov from the metric itself, weighted by the episode's total target weight
        const W = eps.map((e) => e.targets.reduce((s, t) => s + t.weight, 0));
        const total = W.reduce((a, b) => a + b, 0);
        fc.pre(total > 1e-9);
        const weighted = eps.reduce((s, e, k) => s + (W[k]! > 0 ? (pooledMetrics([e], tau).wcov as number) * W[k]! : 0), 0) / total;
        expect(m.wcov as number).toBeCloseTo(weighted, 9);
        // with equal total weights (and equal target counts) pooling and averaging agree
        const same = eps.map((e) => ({ ...e, targets: e.targets.map((t) => ({ ...t, weight: 1 })) })).slice(0, 1);
        const twice = [...same, ...same];
        expect(pooledMetrics(twice, tau).wcov).toBeCloseTo(episodeCounts(same[0]!, tau).coveredWeight / same[0]!.targets.length, 9);
      }),
    );
  });
});
