// A group job that dies after the best trajectory's user-state update was applied, but
// before its group file says so, is retried by BullMQ. The retry must see the change (the
// user's state version moved past the one recorded just before applying) and not apply it
// again: one memory per group, never two. The "crash" is a TransientError thrown right
// after the real (synthetic) update, which is what a retry sees after a SIGKILL there too.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { metricsSink } from '../../monitor/sink.ts';
import { InstanceSchema, type UserState } from '../../data/schema.ts';
import { TransientError } from '../../util/errors.ts';
import type { RunContext } from '../../workers/context.ts';
import { RunController } from '../../workers/controller.ts';
import { startGroupWorker } from '../../workers/group-worker.ts';
import type { Parts } from '../../workers/parts.ts';
import { connect, metricsStreamKey } from '../../workers/queues.ts';
import { startRolloutWorker } from '../../workers/rollout-worker.ts';
import { writeRunInfo, type RunInfo } from '../../workers/run-info.ts';
import { startSyntheticServer } from '../../workers/synthetic/policy-server.ts';
import { syntheticParts } from '../../workers/synthetic/parts.ts';
import { startTrainerWorker } from '../../workers/trainer-worker.ts';
import { deleteKeys, instance } from '../e2e/helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'gsteer-group-retry-'));
const prefix = `gsteer-test:group-retry:${Math.random().toString(16).slice(2, 10)}`;
afterAll(async () => {
  await deleteKeys(prefix);
  rmSync(root, { recursive: true, force: true });
});

describe('group stage retry', () => {
  it('does not apply a user-state update twice when the job died after applying it', async () => {
    const data = join(root, 'instances.jsonl');
    writeFileSync(data, [instance(0), instance(1)].map((i) => JSON.stringify(i)).join('\n'));
    const cfg = resolveConfig({
      runName: 'retry', runDir: root, seed: 5, data: { instances: [data], userStates: join(root, 'none.jsonl') },
      policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 0 },
      rollout: { groupSize: 2, concurrency: 2 },
      grpo: { passes: 1, groupsPerUpdate: 2, learningRate: 0.1 },
      checkpoint: { every: 1, keep: 2 },
      queues: { prefix, attempts: 3, backoffMs: 50, pollMs: 50 },
    });
    const server = await startSyntheticServer();
    const layout = runLayout(join(root, 'retry'));
    const info: RunInfo = { v: 1, runId: 'retry', epoch: 0, createdAt: '', policyUrl: server.url, initAdapter: null };
    writeRunInfo(layout, info);
    const synthetic = syntheticParts(cfg, 'retry');
    let applyCalls = 0;
    let crashed = false;
    const parts: Parts = {
      ...synthetic,
      users: async () => {
        const real = await synthetic.users();
        return {
          ...real,
          async applyBest(group, inst) {
            applyCalls++;
            await real.applyBest(group, inst);
            if (!crashed && inst.id === 'inst-0') {
              crashed = true;
              throw new TransientError('worker died after applying the user-state update');
            }
          },
        };
      },
    };
    const instances = [instance(0), instance(1)].map((i) => InstanceSchema.parse(i));
    const ctx: RunContext = { cfg, layout, info, instances: new Map(instances.map((i) => [i.id, i])), parts, policyUrl: server.url };
    const logs: string[] = [];
    const log = (m: string) => logs.push(m);
    const workers: Worker[] = [await startTrainerWorker(ctx, log), await startGroupWorker(ctx, log), await startRolloutWorker(ctx)];
    const redis = connect(cfg.queues.redisUrl);
    const users = await parts.users();
    try {
      const controller = new RunController({ cfg, layout, info, instances, users, redis, sink: metricsSink(layout.metrics, redis, metricsStreamKey(prefix, 'retry')), policyUrl: server.url, startStep: 0, log });
      const outcome = await controller.run();
      expect(outcome).toMatchObject({ kind: 'done', step: 1, total: 1 });
      expect(crashed).toBe(true);
      // Two groups, one crash: applyBest ran for each group once, and the retry skipped it.
      expect(applyCalls).toBe(2);
      expect(logs.join('\n')).toMatch(/user-state update found applied before a crash; not applying it again/);
      // The synthetic update appends one memory per applied group (the policy always STOPs).
      const states = (await users.dump()) as UserState[];
      const byUser = Object.fromEntries(states.map((s) => [s.userId, s.memories.length]));
      expect(byUser).toEqual({ 'user-0': 1, 'user-1': 1 });
      const metrics = readFileSync(layout.metrics, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(metrics.map((m) => m.groups)).toEqual([2]);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await users.close();
      redis.disconnect();
      await server.close();
    }
  }, 60_000);
});
