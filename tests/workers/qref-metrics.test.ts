// QREF's evidence-filter metrics pooled per update (workers/update-metrics.ts) and the
// dashboard panels for PPO's critic and the filter (monitor/dashboard/charts.ts).
import { describe, expect, it } from 'vitest';
import { updateMetrics } from '../../workers/update-metrics.ts';
import { chartPlan } from '../../monitor/dashboard/charts.ts';
import type { GroupFile } from '../../checkpoints/group-file.ts';
import type { UpdateResult } from '../../workers/payloads.ts';

const traj = (kept: number, evRetrieved: number, evKept: number) => ({
  reward: 0,
  components: { filter_retrieved: 5, filter_kept: kept, filter_evidence_retrieved: evRetrieved, filter_evidence_kept: evKept },
});
const group = (id: string, scores: ReturnType<typeof traj>[]): GroupFile => ({
  v: 1,
  groupId: id,
  step: 1,
  instanceId: id,
  userId: id,
  policyVersion: 0,
  snapshotId: `${id}@0`,
  dropped: false,
  trajPaths: scores.map((_, i) => `t${i}`),
  scores,
  best: 0,
  episodes: scores.map(() => ({ turns: 1, askCount: 0, retrieveCount: 0, termination: 'stop' as const, completionTokens: 10 })),
  applied: true,
});
const result: UpdateResult = {
  step: 1,
  policyVersion: 1,
  adapterPath: 'a',
  stats: { loss: 0, clip_ratio: 0, grad_norm: 0, entropy: 0, num_tokens: 1, train_seconds: 1 },
  groupsTrained: 2,
  advantageStats: { reward_std: 0 },
};
const timing = { wallSeconds: 1, rolloutSeconds: 1, policyVersionUsed: 0, waitRolloutsSeconds: 0, waitTrainerSeconds: 0 };

describe('QREF update metrics', () => {
  it('pools filter precision and recall over the update (sums, then ratios)', () => {
    // kept 2 + 4 = 6, evidence kept 1 + 3 = 4, evidence retrieved 2 + 3 = 5 -> precision 4/6, recall 4/5
    // (the mean of the per-trajectory ratios would be (1/2 + 3/4)/2 = 0.625 and (1/2 + 1)/2 = 0.75)
    const rec = updateMetrics(1, [group('a', [traj(2, 2, 1)]), group('b', [traj(4, 3, 3)])], result, timing);
    expect(rec['filter/precision']).toBeCloseTo(4 / 6, 12);
    expect(rec['filter/recall']).toBeCloseTo(4 / 5, 12);
  });

  it('leaves them out when nothing was kept or retrieved', () => {
    const rec = updateMetrics(1, [group('a', [traj(0, 0, 0)])], result, timing);
    expect(rec['filter/precision']).toBeUndefined();
    expect(rec['filter/recall']).toBeUndefined();
  });
});

describe('dashboard panels for PPO and QREF', () => {
  it('gives the critic and the filter their own charts', () => {
    const ids = chartPlan([
      'critic/vf_loss',
      'critic/vf_explained_var',
      'critic/returns_var',
      'critic/residual_var',
      'critic/vf_clipfrac',
      'critic/returns/mean',
      'critic/values/mean',
      'actor/reward_kl_penalty',
      'filter/precision',
      'filter/recall',
    ]).map((c) => [c.id, c.series.map((s) => s.key)]);
    expect(ids).toEqual([
      ['vf_loss', ['critic/vf_loss']],
      ['vf_explained_var', ['critic/vf_explained_var']],
      ['vf_variances', ['critic/residual_var', 'critic/returns_var']],
      ['vf_clipfrac', ['critic/vf_clipfrac']],
      ['returns', ['critic/returns/mean', 'critic/values/mean']],
      ['reward_kl', ['actor/reward_kl_penalty']],
      ['filter', ['filter/precision', 'filter/recall']],
    ]);
  });
});
