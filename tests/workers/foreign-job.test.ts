// Group and trainer workers check every job's run id (issue 32 item 1): a job of another run
// on their queues (a misrouted worker, a queue shared by hand) fails at once as unrecoverable
// (one attempt, never retried) naming both runs, and nothing of it touches this run's
// directory or user states. Real Redis, synthetic parts.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, type Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { QUEUE, queuePrefix } from '../../checkpoints/run-keys.ts';
import type { RunInfo } from '../../checkpoints/run-info.ts';
import { connect } from '../../util/redis.ts';
import { startGroupWorker } from '../../workers/group-worker.ts';
import { startTrainerWorker } from '../../workers/trainer-worker.ts';
import { syntheticParts } from '../../workers/synthetic/parts.ts';
import type { RunContext } from '../../workers/context.ts';
import { removeRuns } from '../e2e/helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-foreign-'));
const prefix = `gsteer-test:foreign:${Math.random().toString(16).slice(2, 10)}`;
const redis = connect('redis://127.0.0.1:6379');
afterAll(async () => {
  redis.disconnect();
  await removeRuns({ dir: root, prefix });
});

async function failed(q: Queue, id: string): Promise<Job> {
  for (let t = 0; t < 200; t++) {
    const job = await q.getJob(id);
    if (job && (await job.getState()) === 'failed') return (await q.getJob(id))!; // read again: the job as it failed
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${id} did not fail`);
}

describe("a job of another run on this run's queues", () => {
  it('group and trainer workers refuse it: unrecoverable, one attempt, both runs named', async () => {
    const cfg = resolveConfig({ runName: 'mine', runDir: root, queues: { prefix, attempts: 3, backoffMs: 50, pollMs: 50 } });
    const layout = runLayout(join(root, 'mine'));
    const info: RunInfo = { v: 1, runId: 'mine-00000000', epoch: 0, createdAt: '2026-01-01T00:00:00.000Z', policyUrl: null, initAdapter: null };
    const ctx: RunContext = { cfg, layout, info, instances: new Map(), parts: await syntheticParts(cfg, info.runId), policyUrl: 'http://127.0.0.1:1/v1' };
    const workers = [await startGroupWorker(ctx, () => {}), await startTrainerWorker(ctx, () => {})];
    const conn = { connection: redis, prefix: queuePrefix(prefix, info.runId) };
    const groups = new Queue(QUEUE.groups, conn);
    const updates = new Queue(QUEUE.updates, conn);
    try {
      const base = { v: 1, runId: 'theirs-11111111', epoch: 0, step: 1 };
      await groups.add(
        'group',
        {
          ...base,
          groupId: 's000001-g0',
          groupIndex: 0,
          instanceId: 'inst-0',
          userId: 'user-0',
          policyVersion: 0,
          snapshotId: 'user-0@0',
          groupSize: 2,
          groupPath: 'groups/s000001-g0.json',
        },
        { jobId: 'g', attempts: 3 },
      );
      await updates.add('update', { ...base, policyVersion: 1, groupIds: ['s000001-g0'] }, { jobId: 'u', attempts: 3 });
      for (const [q, id] of [
        [groups, 'g'],
        [updates, 'u'],
      ] as const) {
        const job = await failed(q, id);
        expect(job.failedReason).toBe(
          `job ${id} belongs to run theirs-11111111, this worker serves mine-00000000 (${layout.root}); start workers with --run pointing at the job's run directory`,
        );
        expect(job.attemptsMade).toBe(1);
      }
      expect(existsSync(layout.abs('groups/s000001-g0.json'))).toBe(false);
      expect(existsSync(layout.adapter(1))).toBe(false);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await groups.close();
      await updates.close();
    }
  }, 60_000);
});
