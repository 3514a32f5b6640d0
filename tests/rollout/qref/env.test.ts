// The QREF environment's episode and reward (rollout/qref/env.ts) with a scripted policy
// (a PolicyClient that returns fixed text), the real Qwen3 tokenizer, BM25 over a hand-made
// corpus whose rankings are obvious, and the rule filter. Numbers worked by hand.
import { describe, expect, it } from 'vitest';
import { RunConfigSchema } from '../../../configs/schema.ts';
import { qwen3Tokenizer } from '../../../core/tokenizer.ts';
import { Bm25Search } from '../../../rollout/qref/bm25.ts';
import { asQrefInstances, qrefRecord, qrefScore, runQrefEpisode } from '../../../rollout/qref/env.ts';
import { RuleEvidenceFilter } from '../../../rollout/qref/filter-rule.ts';
import type { CompletionResult, PolicyClient } from '../../../rollout/policy-client.ts';
import { trajectoryView } from '../../../rollout/env/view.ts';

const corpus = [
  { id: 'd1', title: 'Amos Kell', text: 'Amos Kell, the engineer, was born in Marrowby.' },
  { id: 'd2', title: 'Kestwick Bridge', text: 'Kestwick Bridge history: stone arches over the river.' },
  { id: 'd3', title: 'Oat cakes', text: 'A cooking recipe with oats and butter.' },
];
const [inst] = asQrefInstances([
  { id: 'q1', split: 'train', question: 'Where was the engineer Amos Kell born?', evidenceIds: ['d1'], trace: '', batch: ['Kestwick Bridge history'] },
]);
const cfg = RunConfigSchema.parse({ env: 'qref', rollout: { constrained: false, maxTokens: 64 } });
const job = { runId: 'r', groupId: 's000001-g0', index: 0, policyVersion: 0, model: 'policy-v0', snapshotId: 'q1@0', seed: 3 };

const scripted = (text: string, finishReason: CompletionResult['finishReason'] = 'stop'): PolicyClient =>
  ({
    complete: async () => ({ completionIds: [1, 2, 3], logprobs: [-0.1, -0.2, -0.3], text, finishReason }),
  }) as unknown as PolicyClient;

const deps = (text: string, finish?: CompletionResult['finishReason']) => ({
  policy: scripted(text, finish),
  tokenizer: qwen3Tokenizer(),
  search: new Bm25Search(corpus),
  filter: new RuleEvidenceFilter(0.45),
});

describe('QREF episode', () => {
  it('a refined batch that finds the evidence the original missed earns the recall gain', async () => {
    const traj = await runQrefEpisode(deps('RATIONALE: search the engineer, not the bridge\nQUERIES:\n- Amos Kell engineer born\n'), inst!, job, cfg);
    expect(traj.termination).toBe('stop');
    expect(traj.turns).toHaveLength(1);
    expect(traj.turns[0].tokens.completionIds).toEqual([1, 2, 3]);
    const rec = qrefRecord(traj);
    // original "Kestwick Bridge history" matches d2 only; refined "Amos Kell engineer born" matches d1 only
    expect(rec.originalIds).toEqual([['d2']]);
    expect(rec.refinedIds).toEqual([['d1']]);
    const s = qrefScore(traj, inst!, cfg.qref.reward);
    // recall 1 - 0 = 1, one query each: no extra-query cost -> R = 1
    expect(s.reward).toBe(1);
    expect(s.components).toMatchObject({
      recall_refined: 1,
      recall_original: 0,
      extra_queries: 0,
      invalid: 0,
      filter_retrieved: 1,
      filter_evidence_retrieved: 1,
    });
    // need = {engine, amo, kell, born} (question) + query terms; d1 holds all of them -> kept
    expect(rec.kept).toEqual([[0]]);
    expect(s.components.filter_evidence_kept).toBe(1);
    expect(trajectoryView(traj)[0]).toMatchObject({ action: 'REFINE', execute: 'Amos Kell engineer born' });
  });

  it('extra queries cost qref.reward.queryCost each', async () => {
    const traj = await runQrefEpisode(deps('RATIONALE: r\nQUERIES:\n- Amos Kell\n- oats butter\n- Marrowby\n'), inst!, job, cfg);
    const s = qrefScore(traj, inst!, cfg.qref.reward);
    // recall gain 1, extra = 3 - 1 = 2 -> R = 1 - 0.1 * 2 = 0.8
    expect(s.reward).toBeCloseTo(0.8, 12);
    expect(s.components.extra_queries).toBe(2);
  });

  it('malformed or truncated output is an invalid episode with the penalty, never a crash', async () => {
    for (const [text, finish, reason] of [
      ['hello there', 'stop', 'unexpected_line'],
      ['RATIONALE: x\nQUERIES:\n- Amos', 'length', 'truncated'],
    ] as const) {
      const traj = await runQrefEpisode(deps(text, finish), inst!, job, cfg);
      expect(traj.termination).toBe('invalid');
      expect(traj.invalidReason).toBe(reason);
      const s = qrefScore(traj, inst!, cfg.qref.reward);
      expect(s.reward).toBe(-1);
      expect(s.components).toMatchObject({ invalid: 1, recall_original: 0, filter_retrieved: 0 });
    }
  });
});
