// `gsteer eval compare` on the hand-checked fixture (tests/eval/compare-fixture.ts).
//
// The spread is made checkable by hand with two chosen resamples per view: r1 = every
// instance once (the pooled value), r2 = the instance at sorted position 1, n times (its own
// ratio). With two replicates a and b: SE = |a - b| / sqrt(2); the 95% interval is
// [min + 0.025 |a - b|, max - 0.025 |a - b|] (type-7 quantiles of two points).
// Position 1 is b2 in every intrinsic view (sorted: b1 b2 s1 t1 u1 | b1 b2 u1 | b1 b2 t1 | b1 b2).
//
// Direct Rewrite, per instance [covered w / w, essential covered / essential w, covered /
// targets, matched / factors]:
//   s1 2/3, 2/2, 1/2, 1/2   u1 1/4, 0/3, 1/2, 1/1   t1 2/2, 2/2, 1/1, 1/2   b1 0/2, 0/1, 0/2, 0/0   b2 2/4, 2/2, 1/2, 1/1
//   overall   WCov 7/15 = .4667  E-WCov 6/10 = .6  P 4/6 = .6667  R 4/9 = .4444  F1 2PR/(P+R) = 8/15 = .5333
//   b2 alone  WCov .5  E-WCov 1  P 1  R .5  F1 2/3
//   SE: WCov (1/30)/√2 = .0236; E-WCov .4/√2 = .2828; P (1/3)/√2 = .2357; R (1/18)/√2 = .0393; F1 (2/15)/√2 = .0943
//   Unseen User = u1 ∪ b1 ∪ b2: WCov 3/10 = .3 (b2 .5: SE .1414); P 2/2, R 2/6 -> F1 .5 (b2 2/3: SE .1179)
//   Unseen Task = t1 ∪ b1 ∪ b2: WCov 4/8 = .5 (SE 0); P 2/3, R 2/5 -> F1 .5 (SE .1179)
//   Both = b1 ∪ b2: WCov 2/6 = .3333 (SE .1179); P 1/1, R 1/4 -> F1 .4 (SE (4/15)/√2 = .1886); no asks, no retrievals
// G-STEER (b1 twice: episodes e0, e1):
//   s1 3/3, 2/2, 2/2, 2/3 (2 asks, 1 ret.)   u1 3/4, 3/3, 1/2, 1/2 (3, 0)   t1 2/2, 2/2, 1/1, 1/1 (1, 1)
//   b1e0 1/2, 1/1, 1/2, 1/2 (2, 0)   b1e1 1/2, 0/1, 1/2, 1/1 (4, 1)   b2 4/4, 2/2, 2/2, 2/2 (2, 0)
//   overall (6 episodes) WCov 14/17 = .8235  E-WCov 10/11 = .9091  P 8/11  R 8/11  F1 8/11 = .7273
//           Ask 14/6 = 2.33, Ret. 3/6 = .5; b2 alone: all ratios 1, Ask 2, Ret. 0
//   SE: WCov (3/17)/√2 = .1248; E-WCov (1/11)/√2 = .0643; P = R = F1 (3/11)/√2 = .1928; Ask (1/3)/√2 = .24; Ret. .5/√2 = .35
//   Unseen User = u1 ∪ b1 ∪ b2: WCov 9/12 = .75 (SE .1768); P 5/7, R 5/8 -> F1 2/3 (SE .2357)
//   Unseen Task = t1 ∪ b1 ∪ b2: WCov 8/10 = .8 (SE .1414); P 5/6, R 5/7 -> F1 10/13 = .7692 (SE (3/13)/√2 = .1632)
//   Both = b1 ∪ b2: WCov 6/8 = .75 (SE .1768); P 4/5, R 4/6 -> F1 8/11 (SE .1928)
// Figure 3b: G-STEER's gain over Direct per question = (10/11 - 6/10) / (14/6) = 51/385 = .1325;
//   on r2 (b2 alone) both have E-WCov 1: gain 0, so SE = (51/385)/√2 = .0937.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { run } from '../../cli/commands/eval.ts';
import type { Resampler } from '../../eval/bootstrap.ts';
import { compare } from '../../eval/compare.ts';
import type { EvalReport } from '../../eval/report.ts';
import { writeFixture, SCORES } from './compare-fixture.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'gsteer-compare-'));
  dirs.push(d);
  return d;
};

/** r1: every instance once; r2: the instance at sorted position 1 (or 0 for a single one), n times. */
const HAND: Resampler = (_view, n) => [Array.from({ length: n }, (_, i) => i), Array.from({ length: n }, () => Math.min(1, n - 1))];
const handSpread = { resample: HAND, samples: 2, level: 0.95, seed: 0 };

/** CSV cells of a (pooled, r2) pair: value, SE, lo, hi with 6 decimals (the formula in the header). */
const csvCell = (v: number, b: number) => {
  const d = Math.abs(v - b);
  return [v, d / Math.SQRT2, Math.min(v, b) + 0.025 * d, Math.max(v, b) - 0.025 * d].map((x) => x.toFixed(6)).join(',');
};

const COMBINED = '- Unseen User = user-only unseen ∪ both unseen; Unseen Task = task-only unseen ∪ both unseen (pooled over the union, paper Table 8).';

describe('gsteer eval compare', () => {
  it('Table 2 reproduces the hand-checked fixture byte for byte (markdown and CSV), combined unseen groups included', async () => {
    const dir = tempDir();
    const f = writeFixture(dir);
    const out = join(dir, 'compare');
    await compare({
      files: [
        { file: f.direct, ablation: false },
        { file: f.gsteer, ablation: false },
      ],
      sweep: [],
      spread: handSpread,
      out,
    });
    expect(readFileSync(join(out, 'table2.md'), 'utf8')).toBe(`## Table 2: intrinsic evaluation (threshold 0.55)

| Method | WCov | E-WCov | Prec. | Rec. | F1 | Unseen User WCov | Unseen User F1 | Unseen Task WCov | Unseen Task F1 | Both Unseen WCov | Both Unseen F1 | Ask | Ret. |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| Direct Rewrite | 0.4667 ± 0.0236 | 0.6000 ± 0.2828 | 0.6667 ± 0.2357 | 0.4444 ± 0.0393 | 0.5333 ± 0.0943 | 0.3000 ± 0.1414 | 0.5000 ± 0.1179 | 0.5000 ± 0.0000 | 0.5000 ± 0.1179 | 0.3333 ± 0.1179 | 0.4000 ± 0.1886 | 0.00 ± 0.00 | 0.00 ± 0.00 |
| G-STEER | 0.8235 ± 0.1248 | 0.9091 ± 0.0643 | 0.7273 ± 0.1928 | 0.7273 ± 0.1928 | 0.7273 ± 0.1928 | 0.7500 ± 0.1768 | 0.6667 ± 0.2357 | 0.8000 ± 0.1414 | 0.7692 ± 0.1632 | 0.7500 ± 0.1768 | 0.7273 ± 0.1928 | 2.33 ± 0.24 | 0.50 ± 0.35 |

- Pooled over each view's episodes at threshold 0.55; ± bootstrap standard error over instances (B = 2, seed 0; an instance's episodes are resampled together); the CSV adds the 95% percentile interval.
${COMBINED}
- Ask / Ret.: mean Ask and Retrieve turns per episode (the Stop turn not counted).
- Direct Rewrite: ${f.direct} (5 episodes of 5 instances; encoder embedded-hash, extractor rule)
- G-STEER: ${f.gsteer} (6 episodes of 5 instances; encoder embedded-hash, extractor rule)
`);
    const head = [
      'method',
      ...[
        'overall.wcov',
        'overall.ewcov',
        'overall.precision',
        'overall.recall',
        'overall.f1',
        'unseen_user_combined.wcov',
        'unseen_user_combined.f1',
        'unseen_task_combined.wcov',
        'unseen_task_combined.f1',
        'both_unseen.wcov',
        'both_unseen.f1',
        'overall.meanAsk',
        'overall.meanRetrieve',
      ].flatMap((k) => [k, `${k}.se`, `${k}.lo`, `${k}.hi`]),
    ].join(',');
    // (pooled, b2 alone) per column, from the header's working
    const direct = [
      [7 / 15, 0.5],
      [0.6, 1],
      [2 / 3, 1],
      [4 / 9, 0.5],
      [8 / 15, 2 / 3],
      [0.3, 0.5],
      [0.5, 2 / 3],
      [0.5, 0.5],
      [0.5, 2 / 3],
      [1 / 3, 0.5],
      [0.4, 2 / 3],
      [0, 0],
      [0, 0],
    ];
    const gsteer = [
      [14 / 17, 1],
      [10 / 11, 1],
      [8 / 11, 1],
      [8 / 11, 1],
      [8 / 11, 1],
      [0.75, 1],
      [2 / 3, 1],
      [0.8, 1],
      [10 / 13, 1],
      [0.75, 1],
      [8 / 11, 1],
      [14 / 6, 2],
      [0.5, 0],
    ];
    const row = (name: string, cells: number[][]) => [name, ...cells.map(([v, b]) => csvCell(v!, b!))].join(',');
    expect(readFileSync(join(out, 'table2.csv'), 'utf8')).toBe(`${head}\n${row('Direct Rewrite', direct)}\n${row('G-STEER', gsteer)}\n`);
  });

  it('the long form, the threshold sweep and Figure 3 (gain per question over Direct Rewrite, paired SE)', async () => {
    const dir = tempDir();
    const f = writeFixture(dir);
    const out = join(dir, 'compare');
    const r = await compare({
      files: [
        { file: f.direct, ablation: false },
        { file: f.gsteer, ablation: false },
      ],
      sweep: [0.95, 0.5],
      spread: handSpread,
      out,
    });
    expect(r.tables.map((t) => t.id)).toEqual(['table2', 'table2-groups', 'table9', 'figure3']);
    const md = (id: string) => readFileSync(join(out, `${id}.md`), 'utf8').split('\n');
    // G-STEER's both-unseen row: 2 instances, 3 episodes (b1 twice); E-WCov 3/4, P 4/5, R 4/6 vs b2's 1;
    // Ask 8/3 vs 2: SE (2/3)/√2 = .47; Ret. 1/3 vs 0: .24
    expect(md('table2-groups')).toContain(
      '| G-STEER | Both Unseen | 2 | 3 | 0.7500 ± 0.1768 | 0.7500 ± 0.1768 | 0.8000 ± 0.1414 | 0.6667 ± 0.2357 | 0.7273 ± 0.1928 | 2.67 ± 0.47 | 0.33 ± 0.24 |',
    );
    // user-only unseen is u1 alone: every resample is u1, so no spread (Direct: 1/4, 0/3, P 1, R 1/2, F1 2/3)
    expect(md('table2-groups')).toContain(
      '| Direct Rewrite | User-only Unseen | 1 | 1 | 0.2500 ± 0.0000 | 0.0000 ± 0.0000 | 1.0000 ± 0.0000 | 0.5000 ± 0.0000 | 0.6667 ± 0.0000 | 0.00 ± 0.00 | 0.00 ± 0.00 |',
    );
    // at 0.95 nothing is covered or matched (best cosines are 0.9): every ratio 0; at 0.5 as at 0.55
    expect(md('table9')).toContain('| G-STEER | 0.95 | 0.0000 ± 0.0000 | 0.0000 ± 0.0000 | 0.0000 ± 0.0000 |');
    expect(md('table9')).toContain('| G-STEER | 0.50 | 0.8235 ± 0.1248 | 0.9091 ± 0.0643 | 0.7273 ± 0.1928 |');
    expect(md('table9').filter((l) => l.startsWith('| Direct Rewrite | 0.'))).toHaveLength(2);
    expect(md('figure3').slice(2, 6)).toEqual([
      '| Method | E-WCov | Ask | Gain over Direct Rewrite per question |',
      '| --- | ---: | ---: | ---: |',
      '| Direct Rewrite | 0.6000 ± 0.2828 | 0.00 ± 0.00 | n/a |',
      '| G-STEER | 0.9091 ± 0.0643 | 2.33 ± 0.24 | 0.1325 ± 0.0937 |',
    ]);
    for (const file of ['figure3.svg', 'figure3.png', 'figure3.vl.json']) expect(existsSync(join(out, file)), file).toBe(true);
  });

  it('Tables 4 and 8: downstream P/Q, the Original Query row first, combined unseen views, the stand-in said', async () => {
    const dir = tempDir();
    const f = writeFixture(dir);
    const out = join(dir, 'compare');
    // Downstream instances sorted: b1 s1 t1 u1 | b1 u1 | b1 t1 | b1; r2 = s1, u1, t1, b1 alone.
    // Report scores (mean of 2 rounds) P / Q: Original s1 4.5/6, u1 3/5.5, t1 4/6.5, b1 2.5/5;
    //   G-STEER s1 5/6.5, u1 4.5/6, t1 5.5/7, b1 4/5.5.
    // Original: overall P 14/4 = 3.5 (s1 4.5: SE 1/√2 = .71), Q 23/4 = 5.75 (6: SE .25/√2 = .18);
    //   Unseen User (b1, u1) P 2.75 (u1 3: .18), Q 5.25 (5.5: .18); Unseen Task (b1, t1) P 3.25 (4: .53),
    //   Q 5.75 (6.5: .53); Both (b1) P 2.5, Q 5, SE 0.
    // G-STEER: overall P 4.75 (5: .18), Q 6.25 (6.5: .18); UU P 4.25 (4.5: .18), Q 5.75 (6: .18);
    //   UT P 4.75 (5.5: .53), Q 6.25 (7: .53); Both P 4, Q 5.5.
    await compare({ files: [{ file: f.downstream, ablation: false }], sweep: [], spread: handSpread, out });
    expect(readFileSync(join(out, 'table8.md'), 'utf8')).toBe(`## Table 8: downstream P / Q on unseen settings

| Downstream DRA | Method | Overall P | Overall Q | Unseen User P | Unseen User Q | Unseen Task P | Unseen Task Q | Both Unseen P | Both Unseen Q |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| OpenAI DR (o4-mini-deep-research) | Original Query | 3.50 ± 0.71 | 5.75 ± 0.18 | 2.75 ± 0.18 | 5.25 ± 0.18 | 3.25 ± 0.53 | 5.75 ± 0.53 | 2.50 ± 0.00 | 5.00 ± 0.00 |
| OpenAI DR (o4-mini-deep-research) | G-STEER | 4.75 ± 0.18 | 6.25 ± 0.18 | 4.25 ± 0.18 | 5.75 ± 0.18 | 4.75 ± 0.53 | 6.25 ± 0.53 | 4.00 ± 0.00 | 5.50 ± 0.00 |

- A report's score is the mean of the judge's rounds (rubric stand-in, 2 rounds); a view's score the mean over its reports; ± bootstrap standard error over instances (B = 2, seed 0; an instance's episodes are resampled together); the CSV adds the 95% percentile interval.
${COMBINED}
- OpenAI DR (o4-mini-deep-research): the judge is the embedded stand-in; these are not paper numbers.
`);
    // Table 4, Original: goal = P + 1, content = P - 1, presentation = actionability = P; depth = Q, logic = Q + 1, clarity = Q - 1
    const t4 = readFileSync(join(out, 'table4.md'), 'utf8').split('\n');
    expect(t4[2]).toBe('| Downstream DRA | Method | P | Goal | Content | Presentation | Actionability | Q | Depth | Logic | Clarity |');
    expect(t4[4]).toBe(
      '| OpenAI DR (o4-mini-deep-research) | Original Query | 3.50 ± 0.71 | 4.50 ± 0.71 | 2.50 ± 0.71 | 3.50 ± 0.71 | 3.50 ± 0.71 | 5.75 ± 0.18 | 5.75 ± 0.18 | 6.75 ± 0.18 | 4.75 ± 0.18 |',
    );
  });
});

async function quiet<T>(f: () => Promise<T>): Promise<{ value: T; out: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  try {
    return { value: await f(), out: lines.join('\n') };
  } finally {
    log.mockRestore();
  }
}

describe('gsteer eval compare (command line)', () => {
  it('labels follow their file, ablations go to Table 3, the default folder is beside the results, the SEs are the saved ones', async () => {
    const dir = tempDir();
    const f = writeFixture(dir, { samples: 300 });
    const { value: code, out } = await quiet(() =>
      run([
        'compare',
        f.direct,
        f.gsteer,
        '--label',
        'G-STEER (ours)',
        '--ablation',
        f.gsteer,
        '--label',
        'Full G-STEER',
        '--ablation',
        f.direct,
        f.downstream,
        '--bootstrap',
        '300',
      ]),
    );
    expect(code).toBe(0);
    const outDir = join(dir, 'compare');
    expect(out).toContain(`wrote 17 files to ${outDir} (Figure 3: figure3.svg, figure3.png)`);
    const t2 = readFileSync(join(outDir, 'table2.md'), 'utf8');
    expect(t2).toContain('| Direct Rewrite | 0.4667 ± ');
    expect(t2).toContain('| G-STEER (ours) | 0.8235 ± ');
    const t3 = readFileSync(join(outDir, 'table3.md'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| Method') && !l.startsWith('| ---'));
    expect(t3.map((l) => l.split(' | ')[0])).toEqual(['| Full G-STEER', '| Direct Rewrite']);
    // the same seed (42) and B as the saved results: compare's SEs are the ones gsteer eval saved
    const saved = (JSON.parse(readFileSync(f.gsteer, 'utf8')) as EvalReport).spread.results[0]!.views;
    const csv = readFileSync(join(outDir, 'table2-groups.csv'), 'utf8').split('\n');
    const heads = csv[0]!.split(',');
    const both = csv.find((l) => l.startsWith('G-STEER (ours),Both Unseen,'))!.split(',');
    expect(Number(both[heads.indexOf('wcov.se')])).toBeCloseTo(saved.both_unseen.est.wcov.se!, 6);
    expect(Number(both[heads.indexOf('f1.lo')])).toBeCloseTo(saved.both_unseen.est.f1.lo!, 6);
    expect(saved.both_unseen.est.wcov.se).toBeGreaterThan(0);
  });

  it('refuses a misplaced or doubled --label, clashing names, mixed thresholds, an edited result and a bad score, saying where', async () => {
    const dir = tempDir();
    const f = writeFixture(dir);
    await expect(run(['compare', '--label', 'X', f.direct])).rejects.toThrow('--label "X" comes before any result file; put it after the file it names');
    await expect(run(['compare', f.direct, '--label', 'A', '--label', 'B'])).rejects.toThrow(`${f.direct} has two labels ("A", "B")`);
    await expect(run(['compare', f.direct, f.gsteer, '--label', 'Direct Rewrite'])).rejects.toThrow('two results are both named "Direct Rewrite"');
    const other = join(dir, 'other.json');
    writeFileSync(other, JSON.stringify({ ...JSON.parse(readFileSync(f.gsteer, 'utf8')), threshold: 0.6 }));
    await expect(run(['compare', f.direct, other, '--label', 'B'])).rejects.toThrow('evaluated at different main thresholds');
    const edited = JSON.parse(readFileSync(f.gsteer, 'utf8')) as EvalReport;
    edited.episodes.pop();
    writeFileSync(other, JSON.stringify(edited));
    await expect(run(['compare', other])).rejects.toThrow(`${other}: results.0.overall.episodes = 6 but its episodes pool to 5 (threshold 0.55)`);
    const bad = join(dir, 'bad.json');
    const s = structuredClone(SCORES);
    s.scores[2]!.rounds[1]!.p.goal = 12;
    writeFileSync(bad, JSON.stringify(s));
    await expect(run(['compare', bad])).rejects.toThrow(`${bad}: scores.2.rounds.1.p.goal = 12: Too big: expected number to be <=10`);
    s.scores[2]!.rounds[1]!.p.goal = 5;
    s.scores[3]!.method = 'Oracle';
    writeFileSync(bad, JSON.stringify(s));
    await expect(run(['compare', bad])).rejects.toThrow(`${bad}: scores.3.method = "Oracle" is not in methods (G-STEER, Original)`);
  });
});
