// The QREF demo's table and paired differences (cli/demo/qref-phases.ts) on `gsteer eval`
// reports written by hand: SFT and PPO on the same three test questions.
import { describe, expect, it } from 'vitest';
import { qrefDemoDifferences, qrefDemoTable, type QrefRow } from '../../cli/demo/qref-phases.ts';
import type { Estimate } from '../../eval/bootstrap.ts';
import { QREF_MEANS, QREF_POOLED, type QrefEpisodeScore, type QrefMetric } from '../../eval/qref.ts';

const est = (value: number | null, se: number | null): Estimate => ({ value, se, lo: null, hi: null, defined: 2, samples: 2 });
const summary = (over: Partial<Record<QrefMetric, Estimate>>) =>
  Object.fromEntries([...QREF_MEANS, ...QREF_POOLED].map((m) => [m, over[m] ?? est(0, 0)])) as Record<QrefMetric, Estimate>;
const eps = (refined: number[]): QrefEpisodeScore[] => refined.map((r, i) => ({ questionId: `q${i}`, reward: r, components: { recall_refined: r } }));
const row = (policy: string, refined: number[], s: Partial<Record<QrefMetric, Estimate>>): QrefRow => ({
  policy,
  report: { label: policy, split: 'test', summary: summary(s), episodes: eps(refined) },
});

describe('QREF demo table', () => {
  const rows = [
    row('SFT', [0, 0.5, 1], { recall_original: est(0.25, 0.1), recall_refined: est(0.5, 0.2887), filter_precision: est(null, null) }),
    row('PPO policy-v2', [1, 0.5, 1], {
      recall_refined: est(0.8333, 0.1667),
      reward: est(-0.5, 0.25),
      invalid_rate: est(0.1, 0.05),
      filter_recall: est(0.4, null),
    }),
  ];
  it('one row per policy and split, every metric ± its SE as gsteer eval reports it', () => {
    const t = qrefDemoTable(rows).split('\n');
    expect(t).toHaveLength(4);
    expect(t[2]).toBe('| SFT | test (3) | 3 | 0.250 ± 0.100 | 0.500 ± 0.289 | 0.000 ± 0.000 | 0.000 ± 0.000 | n/a | 0.000 ± 0.000 |');
    expect(t[3]).toBe('| PPO policy-v2 | test (3) | 3 | 0.000 ± 0.000 | 0.833 ± 0.167 | -0.500 ± 0.250 | 0.100 ± 0.050 | 0.000 ± 0.000 | 0.400 ± n/a |');
  });
  it('PPO - SFT in refined recall, paired over the same questions, with a verdict', () => {
    // per-question differences +1, 0, 0: point +1/3; the seeded resamples give some SE > 0
    const d = qrefDemoDifferences(
      [
        { key: 'sft', row: rows[0]! },
        { key: 'ppo', row: rows[1]! },
      ],
      [
        ['sft', 'ppo'],
        ['sft', 'grpo'],
      ],
      7,
      200,
      0.95,
    );
    expect(d).toMatch(/^- test: PPO policy-v2 - SFT: recall refined \+0\.333 ± 0\.\d{3} \(\d+\.\d SE: (within|above) noise\); reward \+0\.333 ± /);
    expect(d.split('\n')).toHaveLength(1); // no GRPO row: the pair is left out
  });
  it('each pair in the order given: GRPO - SFT, PPO - GRPO', () => {
    const grpo = row('GRPO policy-v2', [0, 1, 1], {});
    const keyed = [
      { key: 'sft', row: rows[0]! },
      { key: 'ppo', row: rows[1]! },
      { key: 'grpo', row: grpo },
    ];
    const d = qrefDemoDifferences(
      keyed,
      [
        ['sft', 'grpo'],
        ['grpo', 'ppo'],
      ],
      7,
      200,
      0.95,
    ).split('\n');
    // GRPO - SFT per question: 0, +0.5, 0 -> +1/6; PPO - GRPO: +1, -0.5, 0 -> +1/6
    expect(d[0]).toMatch(/^- test: GRPO policy-v2 - SFT: recall refined \+0\.167 ± /);
    expect(d[1]).toMatch(/^- test: PPO policy-v2 - GRPO policy-v2: recall refined \+0\.167 ± /);
  });
});
