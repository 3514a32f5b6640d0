// The whole pipeline in one process against the real Redis: FlowProducer flows, the
// rollout / group / trainer workers and the controller, with the synthetic policy server
// on real HTTP. Checks the failure policy: a rollout that keeps failing (transient) is
// retried with backoff up to `attempts`, then its group is dropped and logged and the
// update trains on the other group; an InputError is not retried at all.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Job, Queue, type Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { listCheckpoints } from '../../checkpoints/checkpoint.ts';
import { metricsSink } from '../../monitor/sink.ts';
import { InputError, TransientError } from '../../util/errors.ts';
import type { RunContext } from '../../workers/context.ts';
import { RunController } from '../../workers/controller.ts';
import { startGroupWorker } from '../../workers/group-worker.ts';
import type { Parts } from '../../workers/parts.ts';
import { connect } from '../../util/redis.ts';
import { jobId, metricsStreamKey, QUEUE, queuePrefix } from '../../checkpoints/run-keys.ts';
import { startRolloutWorker } from '../../workers/rollout-worker.ts';
import { writeRunInfo, type RunInfo } from '../../checkpoints/run-info.ts';
import { startSyntheticServer } from '../../workers/synthetic/policy-server.ts';
import { syntheticParts } from '../../workers/synthetic/parts.ts';
import { startTrainerWorker } from '../../workers/trainer-worker.ts';
import { instance, removeRuns } from '../e2e/helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-pipeline-'));
const prefix = `gsteer-test:pipeline:${Math.random().toString(16).slice(2, 10)}`;
afterAll(() => removeRuns({ dir: root, prefix }));

describe('pipeline in one process', () => {
  it('drops a group whose rollout keeps failing, never retries an InputError, and finishes', async () => {
    const data = join(root, 'instances.jsonl');
    // Two instances, one per group of each update; the plan order is seeded, both appear in update 1.
    writeFileSync(data, [instance(0), instance(1)].map((i) => JSON.stringify(i)).join('\n'));
    const cfg = resolveConfig({
      runName: 'pipe',
      runDir: root,
      seed: 3,
      data: { instances: [data], userStates: join(root, 'none.jsonl') },
      policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 0 },
      rollout: { groupSize: 3, concurrency: 3 },
      grpo: { passes: 2, groupsPerUpdate: 2, learningRate: 0.1 },
      checkpoint: { every: 1, keep: 5 },
      queues: { prefix, attempts: 3, backoffMs: 50, pollMs: 50 },
    });
    const server = await startSyntheticServer();
    const layout = runLayout(join(root, 'pipe'));
    const info: RunInfo = { v: 1, runId: 'pipe', epoch: 0, createdAt: '', policyUrl: server.url, initAdapter: null };
    writeRunInfo(layout, info);
    const synthetic = syntheticParts(cfg, 'pipe');
    const calls = new Map<string, number>();
    // inst-1's rollout #1 of update 1 fails transiently every time; inst-0's rollout #2 of update 2 is bad input.
    const parts: Parts = {
      ...synthetic,
      rollout: async () => {
        const real = await synthetic.rollout();
        return {
          close: real.close,
          async run(ctx) {
            const key = `${ctx.job.step}-${ctx.job.instanceId}-${ctx.job.index}`;
            calls.set(key, (calls.get(key) ?? 0) + 1);
            if (key === '1-inst-1-1') throw new TransientError('simulator timed out');
            if (key === '2-inst-0-2') throw new InputError('instance has no targets');
            return real.run(ctx);
          },
        };
      },
    };
    const instances = [instance(0), instance(1)].map((i) => ({ ...i, persona: i.persona, targets: i.targets.map((t) => ({ ...t, lateActivatable: false })) }));
    const ctx: RunContext = { cfg, layout, info, instances: new Map(instances.map((i) => [i.id, i])), parts, policyUrl: server.url };
    const logs: string[] = [];
    const log = (m: string) => logs.push(m);
    const workers: Worker[] = [await startTrainerWorker(ctx, log), await startGroupWorker(ctx, log), ...(await startRolloutWorker(ctx))];
    const redis = connect(cfg.queues.redisUrl);
    const users = await parts.users();
    try {
      const controller = new RunController({
        cfg,
        layout,
        info,
        instances,
        users,
        redis,
        sink: metricsSink(layout.metrics, redis, metricsStreamKey(prefix, 'pipe')),
        policyUrl: server.url,
        startStep: 0,
        log,
      });
      const outcome = await controller.run();
      expect(outcome).toMatchObject({ kind: 'done', step: 2, total: 2 });
      expect(calls.get('1-inst-1-1')).toBe(3); // attempts: 3, then given up
      expect(calls.get('2-inst-0-2')).toBe(1); // InputError -> UnrecoverableError: no retry
      const metrics = readFileSync(layout.metrics, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(metrics.map((m) => [m.step, m.groups, m.groups_dropped])).toEqual([
        [1, 1, 1],
        [2, 1, 1],
      ]);
      expect(logs.filter((l) => l.includes('dropped'))).toHaveLength(2);
      expect(logs.join('\n')).toMatch(/group s000001-g\d \(step 1, instance inst-1\) dropped: 1 of 3 rollouts failed: simulator timed out/);
      expect(listCheckpoints(layout)).toEqual([1, 2]);
      // Job ids are derived from (run, epoch, step, group, trajectory) and hold no ':'.
      const q = new Queue(QUEUE.rollouts, { connection: redis, prefix: queuePrefix(prefix, 'pipe') });
      const j = await Job.fromId(q, jobId.rollout('pipe', 0, 1, 0, 0));
      expect(j?.id).toBe('pipe-e0-s000001-g0-t0');
      await q.close();
      // The metrics stream got one entry per update.
      expect(await redis.xlen(metricsStreamKey(prefix, 'pipe'))).toBe(2);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await users.close();
      redis.disconnect();
      await server.close();
    }
  }, 60_000);
});
