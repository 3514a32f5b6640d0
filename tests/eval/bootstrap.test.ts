// The bootstrap over instances (eval/bootstrap.ts, eval/spread.ts) against hand-worked cases
// and a straightforward implementation written here.
import { describe, expect, it } from 'vitest';
import { quantile, seededResampler, summarize, type Resampler } from '../../eval/bootstrap.ts';
import { viewResult } from '../../eval/spread.ts';
import type { ScoredEpisode } from '../../eval/score.ts';
import { episode, HIT } from './scored-fixture.ts';

const fixed =
  (rs: number[][]): Resampler =>
  () =>
    rs;

describe('quantile and summarize', () => {
  it('type-7 quantiles, worked by hand', () => {
    // [1, 2, 3, 4] at p = 0.25: h = 3 * 0.25 = 0.75 -> 1 + 0.75 * (2 - 1) = 1.75 (numpy.percentile gives 1.75)
    expect(quantile([1, 2, 3, 4], 0.25)).toBeCloseTo(1.75, 12);
    expect(quantile([1, 2, 3, 4], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4], 1)).toBe(4);
    expect(quantile([5], 0.3)).toBe(5);
  });

  it('SE over the defined replicates (n - 1 denominator) and the percentile interval, worked by hand', () => {
    // replicates 0.2, null, 0.4, 0.6: defined 3, mean 0.4, SE = sqrt((0.04 + 0 + 0.04) / 2) = 0.2
    // lo (p 0.025): h = 2 * 0.025 = 0.05 -> 0.2 + 0.05 * 0.2 = 0.21; hi (p 0.975): h = 1.95 -> 0.4 + 0.95 * 0.2 = 0.59
    const e = summarize(0.5, [0.2, null, 0.4, 0.6], 0.95);
    expect(e).toMatchObject({ value: 0.5, defined: 3, samples: 4 });
    expect(e.se).toBeCloseTo(0.2, 12);
    expect(e.lo).toBeCloseTo(0.21, 12);
    expect(e.hi).toBeCloseTo(0.59, 12);
    // no value, or fewer than two defined replicates: no spread
    expect(summarize(null, [0.1, 0.2], 0.95)).toMatchObject({ se: null, lo: null, hi: null });
    expect(summarize(0.3, [0.3, null], 0.95)).toMatchObject({ value: 0.3, se: null, defined: 1 });
  });
});

// Two instances: A covers weight 1 of 2, B 3 of 4 (one target each side, essential).
const A = episode(
  'A',
  'seen',
  [
    [1, true, true],
    [1, false, false],
  ],
  [true],
);
const B = episode(
  'B',
  'seen',
  [
    [3, true, true],
    [1, false, false],
  ],
  [true, false],
);

describe('bootstrap over instances', () => {
  it('all four ordered resamples of two instances, worked by hand', () => {
    // WCov of AA = 2/4, AB = BA = 4/6, BB = 6/8; in 24ths: 12, 16, 16, 18; mean 15.5
    // deviations -3.5, 0.5, 0.5, 2.5 -> squares 12.25 + 0.25 + 0.25 + 6.25 = 19 (/ 24^2)
    // SE = sqrt(19 / 576 / 3) = sqrt(19 / 1728); the pooled value is 4/6
    const r = viewResult(
      [A, B],
      0.55,
      'overall',
      fixed([
        [0, 0],
        [0, 1],
        [1, 0],
        [1, 1],
      ]),
      0.95,
    );
    expect(r.instances).toEqual(['A', 'B']);
    expect(r.est.wcov.value).toBeCloseTo(4 / 6, 12);
    expect(r.est.wcov.se).toBeCloseTo(Math.sqrt(19 / 1728), 12);
    // lo: h = 3 * 0.025 = 0.075 between 12/24 and 16/24; hi: h = 2.925 between 16/24 and 18/24
    expect(r.est.wcov.lo).toBeCloseTo((12 + 0.075 * 4) / 24, 12);
    expect(r.est.wcov.hi).toBeCloseTo((16 + 0.925 * 2) / 24, 12);
    // precision: A 1/1, B 1/2 -> AA 1, AB = BA 2/3, BB 1/2 (same shape: 24ths 24, 16, 16, 12)
    // mean 17, deviations 7, -1, -1, -5 -> 76 / 576 / 3
    expect(r.est.precision.se).toBeCloseTo(Math.sqrt(76 / 1728), 12);
  });

  it('an instance with several episodes is one cluster: its episodes are drawn together', () => {
    // A twice (two episodes), B once. Resample [A, A]: counts of A's two episodes, twice over.
    const A2 = episode(
      'A',
      'seen',
      [
        [1, true, false],
        [1, false, false],
      ],
      [false],
    );
    const r = viewResult(
      [A, B, A2],
      0.55,
      'overall',
      fixed([
        [0, 0],
        [1, 1],
      ]),
      0.95,
    );
    // pooled: covered 1 + 3 + 0 = 4 of 2 + 4 + 2 = 8 -> 0.5; [A, A]: (1 + 0) * 2 / (4 * 2) = 0.25; [B, B] = 0.75
    expect(r.metrics.wcov).toBeCloseTo(0.5, 12);
    expect(r.reps.map((m) => m.wcov)).toEqual([0.25, 0.75]);
    expect(r.reps.map((m) => m.episodes)).toEqual([4, 2]);
  });

  it('seeded draws: the same per (seed, view, n), different across views and seeds, indices in range', () => {
    const a = seededResampler(42, 50)('overall', 7);
    expect(seededResampler(42, 50)('overall', 7)).toEqual(a);
    expect(seededResampler(42, 50)('both_unseen', 7)).not.toEqual(a);
    expect(seededResampler(43, 50)('overall', 7)).not.toEqual(a);
    expect(a).toHaveLength(50);
    expect(a.flat().every((i) => Number.isInteger(i) && i >= 0 && i < 7)).toBe(true);
    expect(new Set(a.flat()).size).toBe(7);
  });

  it('converges to the ideal bootstrap SE, enumerated here over all 27 resamples of three instances', () => {
    const C = episode('C', 'seen', [[3, true, false]], []);
    const inst = [
      [1, 2],
      [3, 4],
      [0, 3],
    ]; // [covered weight, weight] of A, B, C
    const ratios: number[] = [];
    for (const i of [0, 1, 2])
      for (const j of [0, 1, 2])
        for (const k of [0, 1, 2]) {
          const [x, y, z] = [inst[i]!, inst[j]!, inst[k]!];
          ratios.push((x[0]! + y[0]! + z[0]!) / (x[1]! + y[1]! + z[1]!));
        }
    const mean = ratios.reduce((s, r) => s + r, 0) / 27;
    const ideal = Math.sqrt(ratios.reduce((s, r) => s + (r - mean) ** 2, 0) / 27); // B -> infinity
    const r = viewResult([A, B, C], 0.55, 'overall', seededResampler(7, 20_000), 0.95);
    // Monte Carlo error of an SE from B draws ~ SE / sqrt(2B) ~ 0.001 here
    expect(Math.abs((r.est.wcov.se as number) - ideal)).toBeLessThan(0.005);
    const repMean = r.reps.reduce((s, m) => s + (m.wcov as number), 0) / r.reps.length;
    expect(Math.abs(repMean - mean)).toBeLessThan(0.005);
  });

  it('every metric agrees with a straightforward implementation on seeded resamples (combined view, repeated episodes)', () => {
    const eps: ScoredEpisode[] = [
      episode(
        's1',
        'seen',
        [
          [2, true, true],
          [1, false, false],
        ],
        [true, false, true],
        2,
        1,
      ),
      episode(
        'u1',
        'unseen_user',
        [
          [3, true, false],
          [1, false, true],
        ],
        [true],
        1,
        0,
      ),
      episode(
        'u1',
        'unseen_user',
        [
          [3, true, true],
          [1, false, true],
        ],
        [true, true],
        3,
        2,
      ),
      episode('t1', 'unseen_task', [[2, true, true]], [false, false], 0, 1),
      episode(
        'b1',
        'both_unseen',
        [
          [1, true, false],
          [2, false, false],
        ],
        [],
        4,
        0,
      ),
      episode(
        'b2',
        'both_unseen',
        [
          [2, false, true],
          [2, true, true],
        ],
        [true],
        1,
        1,
      ),
      episode(
        'b2',
        'both_unseen',
        [
          [2, false, false],
          [2, true, true],
        ],
        [false, true],
        2,
        0,
      ),
    ];
    const rs = seededResampler(5, 300);
    for (const [view, members] of [
      ['overall', ['b1', 'b2', 's1', 't1', 'u1']],
      ['unseen_user_combined', ['b1', 'b2', 'u1']],
    ] as const) {
      const got = viewResult(eps, 0.55, view, rs, 0.9);
      expect(got.instances).toEqual(members);
      // the reference: for each resample, walk the drawn instances' episodes and count
      const reps = rs(view, members.length).map((draw) => {
        let w = 0,
          cw = 0,
          ew = 0,
          ecw = 0,
          t = 0,
          ct = 0,
          f = 0,
          mf = 0,
          asks = 0,
          rets = 0,
          n = 0;
        for (const i of draw)
          for (const e of eps.filter((x) => x.instanceId === members[i])) {
            n++;
            asks += e.askCount;
            rets += e.retrieveCount;
            for (const x of e.targets) {
              const c = (x.bestCosine as number) >= 0.55;
              t++;
              w += x.weight;
              if (c) {
                ct++;
                cw += x.weight;
              }
              if (x.essential) {
                ew += x.weight;
                if (c) ecw += x.weight;
              }
            }
            for (const x of e.factors) {
              f++;
              if (x.bestCosine === HIT) mf++;
            }
          }
        const p = f ? mf / f : null;
        const r = ct / t;
        return {
          wcov: cw / w,
          ewcov: ew ? ecw / ew : null,
          precision: p,
          recall: r,
          f1: p === null ? null : p + r ? (2 * p * r) / (p + r) : 0,
          meanAsk: asks / n,
          meanRetrieve: rets / n,
        };
      });
      for (const k of ['wcov', 'ewcov', 'precision', 'recall', 'f1', 'meanAsk', 'meanRetrieve'] as const) {
        const xs = reps.map((r) => r[k]).filter((x): x is number => x !== null);
        const m = xs.reduce((s, x) => s + x, 0) / xs.length;
        const se = Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
        const sorted = [...xs].sort((a, b) => a - b);
        const q = (p: number) => {
          const h = (sorted.length - 1) * p,
            lo = Math.floor(h);
          return sorted[lo]! + (h - lo) * (sorted[Math.min(lo + 1, sorted.length - 1)]! - sorted[lo]!);
        };
        expect(got.est[k].defined, `${view} ${k}`).toBe(xs.length);
        expect(got.est[k].se, `${view} ${k}`).toBeCloseTo(se, 12);
        expect(got.est[k].lo, `${view} ${k}`).toBeCloseTo(q(0.05), 12);
        expect(got.est[k].hi, `${view} ${k}`).toBeCloseTo(q(0.95), 12);
      }
    }
  });
});
