// A small run directory for the dashboard tests, built the way a run writes one: config.yaml,
// run.json, metrics.jsonl with records made by workers/update-metrics.ts from group files,
// the group and trajectory files of the last update, and logs/. Its queue prefix is the
// test's own, so the Redis keys it touches are the test's to delete.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runLayout } from '../../checkpoints/layout.ts';
import type { MetricsRecord } from '../../monitor/sink.ts';
import { updateMetrics } from '../../workers/update-metrics.ts';
import type { Trajectory } from '../../core/types.ts';
import type { GroupFile } from '../../checkpoints/group-file.ts';
import { groupIdOf } from '../../checkpoints/run-keys.ts';

export const testPrefix = (name: string) => `gsteer-test:dash-${name}:${randomBytes(4).toString('hex')}`;
export const tempRoot = (name: string) => mkdtempSync(join(tmpdir(), `gsteer-dash-${name}-`));

/** Rewards of update `step`'s one group of 4: a slow rise, spread inside the group (epoch shifts them, as a re-run would). */
const rewardsOf = (step: number, epoch: number) => [0, 1, 2, 3].map((i) => Math.round((-1 + 0.08 * step + 0.1 * i - 0.03 * epoch) * 1000) / 1000);

export function fixtureGroup(step: number, epoch = 0): GroupFile {
  const rewards = rewardsOf(step, epoch);
  const groupId = groupIdOf(step, 0);
  return {
    v: 1,
    groupId,
    step,
    instanceId: 'inst-1',
    userId: 'user-1',
    policyVersion: step - 1,
    snapshotId: 'user-1@1',
    dropped: false,
    trajPaths: rewards.map((_, i) => join('trajectories', groupId, `t${i}.json`)),
    scores: rewards.map((r, i) => ({ reward: r, components: { r_align: r + 0.02, coverage: 0.2 + 0.01 * i, c_acq: 0.01 * (i + 1) } })),
    best: 3,
    episodes: rewards.map((_, i) => ({
      turns: 2 + (i % 2),
      askCount: i % 2,
      retrieveCount: 1,
      termination: i === 0 ? 'invalid' : 'stop',
      completionTokens: 100 + 10 * i,
    })),
    applied: true,
  };
}

/** The record update `step` gets (epoch: which start of the run recorded it; wall_time counts from that start). */
export function fixtureRecord(step: number, epoch = 0, wallStart = 0): MetricsRecord {
  return updateMetrics(
    step,
    [fixtureGroup(step, epoch)],
    {
      step,
      policyVersion: step,
      adapterPath: `adapters/policy-v${step}`,
      stats: { loss: 0.1 / step, clip_ratio: 0.01 * (step % 3), grad_norm: 1 + 0.1 * step, entropy: 0.5 - 0.01 * step, num_tokens: 460, train_seconds: 2 },
      groupsTrained: 1,
      advantageStats: { 'advantages/mean': 0, 'advantages/std': 0.9, 'advantages/min': -1.3, 'advantages/max': 1.3, frac_reward_zero_std: 0, reward_std: 0.11 },
    },
    { wallSeconds: wallStart + 10 * step, rolloutSeconds: 4, policyVersionUsed: step - 1, waitRolloutsSeconds: 4, waitTrainerSeconds: 2 },
  );
}

function trajectory(g: GroupFile, i: number): Trajectory {
  const turn = (index: number, action: 'RETRIEVE' | 'ASK' | 'STOP', execute: string) => ({
    index,
    tokens: { promptIds: [1, 2], completionIds: [3, 4], logprobs: [-0.1, -0.2] },
    completionText: `ACTION: ${action}\nEXECUTE: ${execute}`,
    parsed: { ok: true as const, turn: { state: [], plan: `plan of turn ${index}`, action, execute } },
    observation:
      action === 'ASK' ? { kind: 'answer' as const, question: execute, answer: 'about 500 euros', targetId: 'budget', ...llm } : { kind: 'none' as const },
  });
  // trajectory 1: an LLM simulator's accepted reply; 2: none accepted; the others: the embedded simulator
  const llm =
    i === 1
      ? { simulatorReply: '{"target_id": "budget", "answer": "about 500 euros"}' }
      : i === 2
        ? { simulatorReply: null, simulatorError: 'reply_error:truncated after 4 attempt(s)' }
        : {};
  return {
    version: 1,
    runId: 'fixture',
    instanceId: g.instanceId,
    userId: g.userId,
    groupId: g.groupId,
    index: i,
    policyVersion: g.policyVersion,
    snapshotId: g.snapshotId,
    turns: [turn(0, 'ASK', `What is your budget? (trajectory ${i})`), turn(1, 'STOP', 'A trip plan within 500 euros')],
    finalSlots: [],
    askedQuestions: ['What is your budget?'],
    retrieveCount: 0,
    askCount: 1,
    termination: 'stop',
    refinedQuery: 'A trip plan within 500 euros',
  };
}

export interface FixtureRun {
  dir: string;
  name: string;
  records: MetricsRecord[];
}

/** A run directory `root/name` with `steps` updates recorded (and the files of the last one). */
export function fixtureRun(
  root: string,
  name: string,
  o: { steps: number; prefix: string; redisUrl?: string; runId?: string; records?: MetricsRecord[] },
): FixtureRun {
  const layout = runLayout(join(root, name));
  mkdirSync(layout.logs, { recursive: true });
  writeFileSync(layout.config, stringify({ runName: name, runDir: root, queues: { prefix: o.prefix, redisUrl: o.redisUrl ?? 'redis://127.0.0.1:6379' } }));
  writeFileSync(
    layout.runJson,
    `${JSON.stringify({ v: 1, runId: o.runId ?? name, epoch: 0, createdAt: '2026-01-01T00:00:00.000Z', policyUrl: null, initAdapter: null })}\n`,
  );
  const records = o.records ?? Array.from({ length: o.steps }, (_, k) => fixtureRecord(k + 1));
  writeFileSync(layout.metrics, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  const last = Number(records.at(-1)?.step ?? 0);
  if (last > 0) {
    const g = fixtureGroup(last);
    mkdirSync(join(layout.root, 'groups'), { recursive: true });
    mkdirSync(join(layout.trajectories, g.groupId), { recursive: true });
    writeFileSync(layout.abs(layout.groupRel(g.groupId)), JSON.stringify(g));
    g.trajPaths.forEach((rel, i) => writeFileSync(layout.abs(rel), JSON.stringify(trajectory(g, i))));
  }
  return { dir: layout.root, name, records };
}
