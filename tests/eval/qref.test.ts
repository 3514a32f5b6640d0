// QREF evaluation summary (eval/qref.ts): per-question means, pooled filter ratios and the
// bootstrap over questions with hand-picked resamples, worked by hand.
import { describe, expect, it } from 'vitest';
import { qrefSummary, type QrefEpisodeScore } from '../../eval/qref.ts';

const ep = (questionId: string, reward: number, c: Record<string, number>): QrefEpisodeScore => ({ questionId, reward, components: c });
const scores = [
  ep('q1', 1, { recall_original: 0, recall_refined: 1, recall_gain: 1, invalid: 0, queries_refined: 2, filter_kept: 2, filter_evidence_kept: 1, filter_evidence_retrieved: 1 }),
  ep('q1', 0, { recall_original: 0, recall_refined: 0.5, recall_gain: 0.5, invalid: 1, queries_refined: 0, filter_kept: 0, filter_evidence_kept: 0, filter_evidence_retrieved: 1 }),
  ep('q2', -1, { recall_original: 1, recall_refined: 0, recall_gain: 0, invalid: 1, queries_refined: 0, filter_kept: 0, filter_evidence_kept: 0, filter_evidence_retrieved: 0 }),
];

describe('qrefSummary', () => {
  it('means over questions of per-question means; filter ratios pooled; SE over resampled questions', () => {
    // clusters (sorted ids): q1 reward mean 0.5, recall_refined 0.75, invalid 0.5; q2 -1, 0, 1
    // draws [[0, 0], [1, 1]]: reward replicates 0.5 and -1 -> sample std = 1.5 / sqrt(2)
    const s = qrefSummary(scores, () => [[0, 0], [1, 1]], 0.9);
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
