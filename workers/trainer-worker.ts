// Trainer worker (queue `updates`, its own process, concurrency 1): strictly in step order.
// On start it restores the newest adapter version it wrote (adapters/policy-vN: PEFT files
// + optimizer + trainer.json) or writes version 0 (fresh LoRA or the init adapter). An
// update for a later step waits (moved to delayed); one already done returns its recorded
// result (a retry after a crash never trains twice). Each version is written atomically
// (util/run-file.ts: renamed whole; not fsynced, a checkpoint holds the durable copy).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { recoverReplacedIn, writeDirAtomic, writeFileAtomic } from '../util/atomic.ts';
import { adapterDirName, numberedName } from '../checkpoints/layout.ts';
import type { RunContext } from './context.ts';
import { readGroupFile } from '../checkpoints/group-file.ts';
import type { TrainerPart } from './parts.ts';
import { GroupResultSchema, parsePayload, UpdateJobSchema, UpdateResultSchema, type UpdateResult } from './payloads.ts';
import { connect } from '../util/redis.ts';
import { QUEUE, queuePrefix } from '../checkpoints/run-keys.ts';
import { writeRunDir, writeRunFile } from '../util/run-file.ts';
import { buildUpdateBatch } from './update-batch.ts';
import { STALLED_CHECK_MS } from './reclaim.ts';

export const TRAINER_FILE = 'trainer.json';

/** Newest complete adapter version in the run dir (written whole, so existence = complete). */
export function newestVersion(adaptersDir: string): number | null {
  if (!existsSync(adaptersDir)) return null;
  recoverReplacedIn(adaptersDir); // a version whose replacement a crash interrupted
  const vs = readdirSync(adaptersDir)
    .map((n) => numberedName(n, 'policy-v'))
    .filter((v): v is number => v !== null && existsSync(join(adaptersDir, adapterDirName(v), TRAINER_FILE)));
  return vs.length ? Math.max(...vs) : null;
}

async function restoreOrInit(ctx: RunContext, trainer: TrainerPart, log: (m: string) => void): Promise<number> {
  const v = newestVersion(ctx.layout.adapters);
  if (v !== null) {
    await trainer.load(ctx.layout.adapter(v));
    log(`trainer restored adapter version ${v}`);
    return v;
  }
  await trainer.init(ctx.info.initAdapter);
  await writeDirAtomic(ctx.layout.adapter(0), async (dir) => {
    await trainer.save(dir);
    writeFileAtomic(join(dir, TRAINER_FILE), `${JSON.stringify({ step: 0, initAdapter: ctx.info.initAdapter })}\n`);
  });
  log(`trainer wrote adapter version 0 (${ctx.info.initAdapter ? `from ${ctx.info.initAdapter}` : 'fresh LoRA'})`);
  return 0;
}

/** `part`: the trainer part to use (the worker process passes one in a worker thread); default ctx.parts.trainer(). */
export async function startTrainerWorker(ctx: RunContext, log: (msg: string) => void, part?: TrainerPart & { close?(): Promise<void> }): Promise<Worker> {
  const trainer = part ?? (await ctx.parts.trainer());
  let current = await restoreOrInit(ctx, trainer, log);
  const process = async (job: Job, token?: string): Promise<UpdateResult> => {
    const p = parsePayload(UpdateJobSchema, job.data, 'update');
    if (p.runId !== ctx.info.runId)
      throw new UnrecoverableError(
        `job ${job.id} belongs to run ${p.runId}, this worker serves ${ctx.info.runId} (${ctx.layout.root}); start workers with --run pointing at the job's run directory`,
      );
    const dir = ctx.layout.adapter(p.step);
    if (p.step <= current) return UpdateResultSchema.parse(JSON.parse(readFileSync(join(dir, TRAINER_FILE), 'utf8')).result);
    if (p.step > current + 1) {
      // Out of order: wait for step current + 1 (strict step order, method §10 determinism).
      await job.moveToDelayed(Date.now() + ctx.cfg.queues.pollMs, token);
      throw new DelayedError();
    }
    const results = Object.values(await job.getChildrenValues()).map((v) => GroupResultSchema.parse(v));
    const groups = results
      .filter((r) => !r.dropped)
      .map((r) => readGroupFile(ctx.layout.abs(r.groupPath)))
      .sort((a, b) => a.groupId.localeCompare(b.groupId));
    const batch = buildUpdateBatch(groups, ctx.layout, ctx.cfg.grpo, ctx.cfg.algorithm);
    log(`update ${p.step}: training on ${groups.length} group(s), ${batch.sequences.length} sequence(s)`);
    try {
      const stats = batch.sequences.length
        ? await trainer.step(batch.sequences, p.step)
        : { loss: 0, clip_ratio: 0, grad_norm: 0, entropy: 0, num_tokens: 0, train_seconds: 0 }; // every group dropped: v(n) = v(n-1)
      const result: UpdateResult = {
        step: p.step,
        policyVersion: p.step,
        adapterPath: relative(ctx.layout.root, dir),
        stats,
        groupsTrained: groups.length,
        advantageStats: batch.advantageStats,
      };
      await writeRunDir(
        dir,
        async (tmp) => {
          await trainer.save(tmp);
          await writeRunFile(join(tmp, TRAINER_FILE), `${JSON.stringify({ step: p.step, result })}\n`, ctx.cfg.orchestrator.fsyncRunFiles);
        },
        ctx.cfg.orchestrator.fsyncRunFiles,
      );
      current = p.step;
      log(`update ${p.step}: ${groups.length} group(s), loss ${stats.loss.toFixed(4)}, grad_norm ${stats.grad_norm.toFixed(4)}`);
      return result;
    } catch (e) {
      // The in-memory step may have run: go back to the last version on disk before a retry.
      await trainer.load(ctx.layout.adapter(current));
      // The sampler served another adapter than the turns claim: a retry trains on the same wrong samples (method §5.13).
      if ((e as Error).name === 'StaleAdapterError') throw new UnrecoverableError((e as Error).message);
      throw e;
    }
  };
  const q = ctx.cfg.queues;
  const connection = connect(q.redisUrl);
  const worker = new Worker(QUEUE.updates, process, {
    connection,
    prefix: queuePrefix(q.prefix, ctx.info.runId),
    concurrency: 1,
    // Renewed every lockDuration / 2 while the step runs (in a thread, so the loop is free).
    lockDuration: q.trainerLockMs,
    stalledInterval: Math.min(q.trainerLockMs, STALLED_CHECK_MS),
    maxStalledCount: q.attempts,
  });
  worker.on('closed', () => {
    connection.disconnect();
    void part?.close?.();
  });
  return worker;
}
