// One worker process: `gsteer worker rollout|group|trainer --run RUN_DIR`. Started by
// `gsteer train` as a child process, or by hand on other machines against the same Redis
// and run directory (a shared filesystem). SIGTERM/SIGINT: finish the current job, exit 0.
import type { Worker } from 'bullmq';
import { loadRunContext } from './context.ts';
import { startGroupWorker } from './group-worker.ts';
import { startRolloutWorker } from './rollout-worker.ts';
import { startTrainerWorker } from './trainer-worker.ts';
import { threadTrainer } from './trainer-thread.ts';
import { registerWorkers } from './reclaim.ts';
import { connect } from '../util/redis.ts';

export const WORKER_KINDS = ['rollout', 'group', 'trainer'] as const;
export type WorkerKind = (typeof WORKER_KINDS)[number];

export async function runWorker(kind: WorkerKind, runDir: string, configFile?: string, policyUrl?: string): Promise<number> {
  const ctx = await loadRunContext(runDir, configFile, policyUrl);
  const log = (msg: string) => console.log(`[${new Date().toISOString()}] ${kind}: ${msg}`);
  let workers: Worker[];
  switch (kind) {
    case 'rollout':
      workers = await startRolloutWorker(ctx);
      break;
    case 'group':
      workers = [await startGroupWorker(ctx, log)];
      break;
    case 'trainer':
      // tfjs computes in a worker thread: this process's event loop renews the job lock meanwhile.
      workers = [
        await startTrainerWorker(ctx, log, await threadTrainer(ctx.cfg, ctx.info.runId, { runDir: ctx.layout.root, trainerUrl: ctx.info.trainerUrl ?? null })),
      ];
      break;
  }
  for (const worker of workers) {
    worker.on('failed', (job, err) => log(`job ${job?.id} failed (attempt ${job?.attemptsMade}): ${err.message}`));
    worker.on('error', (err) => log(`error: ${err.message}`));
  }
  const redis = connect(ctx.cfg.queues.redisUrl);
  await registerWorkers(
    redis,
    ctx.cfg.queues.prefix,
    ctx.info.runId,
    workers.map((w) => w.id),
  );
  redis.disconnect();
  log(`started (run ${ctx.info.runId}, epoch ${ctx.info.epoch}, ${ctx.parts.kind} parts, pid ${process.pid})`);
  return await new Promise<number>((resolve) => {
    let closing = false;
    const close = (why: string) => {
      if (closing) return;
      closing = true;
      log(`${why}: closing after the current job`);
      void Promise.all(workers.map((w) => w.close())).then(() => resolve(0));
    };
    process.on('SIGTERM', () => close('SIGTERM'));
    process.on('SIGINT', () => close('SIGINT'));
    // Started by gsteer train: child-guard.mjs exits this process when the controller is gone.
  });
}
