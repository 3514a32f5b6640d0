// QREF evaluation summary (eval/qref.ts): per-question means, pooled filter ratios and the
// bootstrap over questions with hand-picked resamples, worked by hand.
import { describe, expect, it } from 'vitest';
import { qrefPairedDifference, qrefSummary, type QrefEpisodeScore } from '../../eval/qref.ts';

const ep = (questionId: string, reward: number, c: Record<string, number>): QrefEpisodeScore => ({ questionId, reward, components: c });
const scores = [
  ep('q1', 1, {
    recall_original: 0,
    recall_refined: 1,
    recall_gain: 1,
    invalid: 0,
    queries_refined: 2,
    filter_kept: 2,
    filter_evidence_kept: 1,
    filter_evidence_retrieved: 1,
  }),
  ep('q1', 0, {
    recall_original: 0,
    recall_refined: 0.5,
    recall_gain: 0.5,
    invalid: 1,
    queries_refined: 0,
    filter_kept: 0,
    filter_evidence_kept: 0,
    filter_evidence_retrieved: 1,
  }),
  ep('q2', -1, {
    recall_original: 1,
    recall_refined: 0,
    recall_gain: 0,
    invalid: 1,
    queries_refined: 0,
    filter_kept: 0,
    filter_evidence_kept: 0,
    filter_evidence_retrieved: 0,
  }),
];

describe('qrefSummary', () => {
  it('means over questions of per-question means; filter ratios pooled; SE over resampled questions', () => {
    // clusters (sorted ids): q1 reward mean 0.5, recall_refined 0.75, invalid 0.5; q2 -1, 0, 1
    // draws [[0, 0], [1, 1]]: reward replicates 0.5 and -1 -> sample std = 1.5 / sqrt(2)
    const s = qrefSummary(
      scores,
      () => [
        [0, 0],
        [1, 1],
      ],
      0.9,
    );
    expect(s.reward.value).toBeCloseTo(-0.25, 12);
    expect(s.recall_refined.value).toBeCloseTo(0.375, 12);
    expect(s.recall_original.value).toBeCloseTo(0.5, 12);
    expect(s.invalid_rate.value).toBeCloseTo(0.75, 12);
    expect(s.queries_refined.value).toBeCloseTo(0.5, 12);
    expect(s.reward.se).toBeCloseTo(1.5 / Math.SQRT2, 12);
    // pooled: evidence kept 1 / kept 2; evidence kept 1 / evidence retrieved 2
    expect(s.filter_precision.value).toBeCloseTo(0.5, 12);
    expect(s.filter_recall.value).toBeCloseTo(0.5, 12);
    // the [1, 1] draw (q2 twice) kept nothing: undefined, so one replicate and no SE
    expect(s.filter_precision.defined).toBe(1);
    expect(s.filter_precision.se).toBeNull();
  });
});

describe('qrefPairedDifference', () => {
  const one = (q: string, refined: number, reward = refined) =>
    ep(q, reward, { recall_original: 0, recall_refined: refined, recall_gain: refined, invalid: 0 });
  const sft = [one('q1', 0), one('q2', 0.5), one('q3', 1)];
  const ppo = [one('q1', 1), one('q2', 0.5), one('q3', 1)];
  it('b - a over the same questions, its SE from the same question resamples applied to both', () => {
    // per-question differences q1 +1, q2 0, q3 0; draws [[0,0,0], [1,1,1], [0,1,2]]: replicates 1, 0, 1/3
    const d = qrefPairedDifference(
      sft,
      ppo,
      'recall_refined',
      () => [
        [0, 0, 0],
        [1, 1, 1],
        [0, 1, 2],
      ],
      0.9,
    );
    expect(d.value).toBeCloseTo(1 / 3, 12);
    const reps = [1, 0, 1 / 3];
    const m = reps.reduce((a, x) => a + x, 0) / 3;
    expect(d.se).toBeCloseTo(Math.sqrt(reps.reduce((a, x) => a + (x - m) ** 2, 0) / 2), 12);
  });
  it('no SE when the two did not see the same questions', () => {
    const d = qrefPairedDifference(
      sft,
      [one('q1', 1), one('q2', 0.5), one('q4', 1)],
      'recall_refined',
      () => [
        [0, 1, 2],
        [0, 0, 0],
      ],
      0.9,
    );
    expect(d.value).toBeCloseTo(1 / 3, 12);
    expect(d.se).toBeNull();
  });
});
