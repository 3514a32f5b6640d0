// A whole run in one process with the synthetic parts: the synthetic policy server, the
// trainer / group / rollout workers and the controller, on the real Redis. For the
// orchestration benchmark (bench/orchestrator) and quick experiments; `gsteer train`
// runs the same pieces as separate processes.
import { join } from 'node:path';
import type { Worker } from 'bullmq';
import { runLayout } from '../../checkpoints/layout.ts';
import type { RunConfig } from '../../configs/schema.ts';
import type { Instance } from '../../data/schema.ts';
import { metricsSink, readMetrics, type MetricsRecord } from '../../monitor/sink.ts';
import type { RunContext } from '../context.ts';
import type { Parts } from '../parts.ts';
import { RunController, type ControllerDeps, type Outcome } from '../controller.ts';
import { startGroupWorker } from '../group-worker.ts';
import { connect } from '../../util/redis.ts';
import { removeRunKeys } from '../run-redis.ts';
import { metricsStreamKey } from '../../checkpoints/run-keys.ts';
import { startRolloutWorker } from '../rollout-worker.ts';
import { writeRunInfo, type RunInfo } from '../../checkpoints/run-info.ts';
import { startTrainerWorker } from '../trainer-worker.ts';
import { syntheticParts } from './parts.ts';
import { startSyntheticServer, type ServerEvent } from './policy-server.ts';

export interface InProcessResult {
  outcome: Outcome;
  metrics: MetricsRecord[];
  seconds: number; // controller start -> done (workers already up)
  completions: number; // policy server completions served
  /** The policy server's completions and adapter loads in order (with `recordEvents`). */
  events: readonly ServerEvent[];
}

export async function runInProcess(
  cfg: RunConfig,
  instances: Instance[],
  o: {
    latencyMs: number;
    log?: (m: string) => void;
    parts?: (p: Parts) => Parts;
    trace?: ControllerDeps['trace'] /** Leave the run's Redis keys (the profile reads BullMQ's event streams afterwards; it deletes them itself). */;
    keepKeys?: boolean;
    recordEvents?: boolean;
  },
): Promise<InProcessResult> {
  const log = o.log ?? (() => {});
  const server = await startSyntheticServer({ latencyMs: o.latencyMs, ...(o.recordEvents ? { recordEvents: true } : {}) });
  const layout = runLayout(join(cfg.runDir, cfg.runName));
  const info: RunInfo = { v: 1, runId: cfg.runName, epoch: 0, createdAt: new Date().toISOString(), policyUrl: server.url, initAdapter: null };
  writeRunInfo(layout, info);
  const synthetic = syntheticParts(cfg, info.runId);
  const parts = o.parts ? o.parts(synthetic) : synthetic;
  const ctx: RunContext = { cfg, layout, info, instances: new Map(instances.map((i) => [i.id, i])), parts, policyUrl: server.url };
  const workers: Worker[] = [await startTrainerWorker(ctx, log), await startGroupWorker(ctx, log)];
  for (let i = 0; i < cfg.rollout.workers; i++) workers.push(...(await startRolloutWorker(ctx)));
  const redis = connect(cfg.queues.redisUrl);
  const users = await parts.users();
  await users.init([]);
  try {
    const sink = metricsSink(layout.metrics, redis, metricsStreamKey(cfg.queues.prefix, info.runId));
    const controller = new RunController({
      cfg,
      layout,
      info,
      instances,
      users,
      redis,
      sink,
      policyUrl: server.url,
      startStep: 0,
      log,
      ...(o.trace ? { trace: o.trace } : {}),
    });
    const t0 = performance.now();
    const outcome = await controller.run();
    return {
      outcome,
      metrics: readMetrics(layout.metrics),
      seconds: (performance.now() - t0) / 1000,
      completions: server.completions(),
      events: server.events(),
    };
  } finally {
    await Promise.all(workers.map((w) => w.close()));
    await users.close();
    if (!o.keepKeys) await removeRunKeys(redis, cfg.queues.prefix, info.runId);
    redis.disconnect();
    await server.close();
  }
}
