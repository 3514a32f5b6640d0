// Per-update metrics from group files, numbers worked by hand in the comments.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metricsSink, readMetrics } from '../../monitor/sink.ts';
import { countLines, truncateLines } from '../../util/jsonl.ts';
import { summaryTable } from '../../monitor/summary.ts';
import { updateMetrics } from '../../workers/update-metrics.ts';
import type { GroupFile } from '../../checkpoints/group-file.ts';
import type { UpdateResult } from '../../workers/payloads.ts';

const group = (id: string, rewards: number[], over: Partial<GroupFile> = {}): GroupFile => ({
  v: 1,
  groupId: id,
  step: 3,
  instanceId: 'i',
  userId: 'u',
  policyVersion: 1,
  snapshotId: 'u@1',
  dropped: false,
  trajPaths: rewards.map((_, i) => `t${i}`),
  scores: rewards.map((r, i) => ({ reward: r, components: { coverage: r + 1, c_acq: i * 0.04 } })),
  best: 0,
  episodes: rewards.map((_, i) => ({
    turns: i + 1,
    askCount: i,
    retrieveCount: 1,
    termination: i === 3 ? 'invalid' : i === 2 ? 'max_turns' : 'stop',
    completionTokens: 10 * (i + 1),
    promptTokens: 100,
    cachedPromptTokens: 20 * i,
  })),
  applied: true,
  ...over,
});

const result: UpdateResult = {
  step: 3,
  policyVersion: 3,
  adapterPath: 'adapters/policy-v000003',
  stats: { loss: 0.5, clip_ratio: 0.1, grad_norm: 2, entropy: 1.5, num_tokens: 200, train_seconds: 4 },
  groupsTrained: 1,
  advantageStats: { 'advantages/mean': 0, frac_reward_zero_std: 0.5, reward_std: 0.25 },
};

describe('updateMetrics', () => {
  it('aggregates rewards, components, episodes and trainer stats (TRL names)', () => {
    const rec = updateMetrics(3, [group('g0', [1, 0, 0, 1]), group('g1', [], { dropped: true, reason: 'x' })], result, {
      wallSeconds: 9,
      rolloutSeconds: 2,
      policyVersionUsed: 1,
      waitRolloutsSeconds: 1.5,
      waitTrainerSeconds: 0.25,
    });
    expect(rec.reward).toBe(0.5); // (1 + 0 + 0 + 1) / 4
    expect(rec['rewards/coverage/mean']).toBe(1.5); // rewards + 1
    expect(rec['rewards/coverage/std']).toBe(0.5); // population std of [2, 1, 1, 2]
    expect(rec['rewards/c_acq/mean']).toBeCloseTo(0.06, 12); // 0.04 * (0 + 1 + 2 + 3) / 4
    expect(rec.reward_std).toBe(0.25); // from the advantage stage (mean within-group std)
    expect(rec.frac_reward_zero_std).toBe(0.5);
    expect(rec.groups).toBe(1);
    expect(rec.groups_dropped).toBe(1);
    expect(rec.policy_lag).toBe(1); // update 3 sampled from version 1: 3 - 1 - 1
    expect(rec['turns/ask']).toBe(1.5); // (0 + 1 + 2 + 3) / 4
    expect(rec['turns/retrieve']).toBe(1);
    expect(rec['completions/mean_length']).toBe(25); // (10 + 20 + 30 + 40) / 4
    expect(rec.invalid_rate).toBe(0.25); // the one invalid_rate: episodes that ended `invalid` (episode 3 of 4)
    expect(rec.nonstop_rate).toBe(0.25); // episodes cut at maxTurns (episode 2 of 4)
    expect(rec.tokens_per_second).toBe(50); // 200 / 4
    expect(rec['rollout/tokens_per_second']).toBe(50); // 100 / 2
    expect(rec.trajectories).toBe(4); // the kept group's 4 episodes; the dropped group has none
    expect(rec.trajectories_per_second).toBe(2); // 4 trajectories / 2 s of rollout
    expect(rec['time/wait_rollouts_s']).toBe(1.5); // passed through from the controller's timing
    expect(rec['time/wait_trainer_s']).toBe(0.25);
    // prefill: 4 episodes x 100 prompt tokens, of which 0 + 20 + 40 + 60 came from the server's prefix cache
    expect(rec['rollout/prompt_tokens']).toBe(400);
    expect(rec['rollout/cached_prompt_tokens']).toBe(120);
    expect(rec['rollout/prefill_tokens']).toBe(280);
    expect(rec['rollout/prefix_cache_hit_rate']).toBe(0.3);
    expect(rec).toMatchObject({ loss: 0.5, clip_ratio: 0.1, grad_norm: 2, entropy: 1.5, step: 3, policy_version: 3, wall_time: 9 });
  });
});

describe('metrics sink and summary', () => {
  it('appends lines, counts and truncates them, and tables them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-metrics-'));
    try {
      const file = join(dir, 'metrics.jsonl');
      const sink = metricsSink(file, null, 'unused');
      for (let s = 1; s <= 5; s++) await sink.write({ step: s, reward: s / 10 });
      expect(sink.lines()).toBe(5);
      truncateLines(file, 3);
      expect(countLines(file)).toBe(3);
      expect(readMetrics(file).map((r) => r.step)).toEqual([1, 2, 3]);
      const table = summaryTable(readMetrics(file));
      expect(table.split('\n')).toHaveLength(5); // header, rule, 3 rows
      expect(table).toMatch(/\n\s+3\s+0\.3000/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
