// Rollout worker: one episode per job (queue `rollouts`), the trajectory written to the run
// directory, its path returned to the group parent. Bad input (InputError: unknown
// instance, a server that rejects the request) becomes UnrecoverableError: not retried.
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { InputError } from '../util/errors.ts';
import type { RunContext } from './context.ts';
import { parsePayload, RolloutJobSchema, type RolloutResult } from './payloads.ts';
import { connect, QUEUE } from './queues.ts';
import { writeRunFile } from './run-file.ts';

export function unrecoverable(e: unknown): never {
  if (e instanceof InputError) throw new UnrecoverableError(e.message);
  throw e;
}

export async function startRolloutWorker(ctx: RunContext): Promise<Worker> {
  const rollout = await ctx.parts.rollout();
  const process = async (job: Job): Promise<RolloutResult> => {
    const p = parsePayload(RolloutJobSchema, job.data, 'rollout');
    if (p.runId !== ctx.info.runId) throw new UnrecoverableError(`job ${job.id} belongs to run ${p.runId}, this worker serves ${ctx.info.runId}`);
    const instance = ctx.instances.get(p.instanceId);
    if (!instance) throw new UnrecoverableError(`instance ${p.instanceId} is not in ${ctx.cfg.data.instances.join(', ')}`);
    const traj = await rollout.run({ job: p, instance, policyUrl: ctx.policyUrl }).catch(unrecoverable);
    await writeRunFile(ctx.layout.abs(p.trajPath), JSON.stringify(traj));
    return { index: p.index, trajPath: p.trajPath };
  };
  const q = ctx.cfg.queues;
  const worker = new Worker(QUEUE.rollouts, process, {
    connection: connect(q.redisUrl),
    prefix: q.prefix,
    concurrency: ctx.cfg.rollout.concurrency,
    lockDuration: q.rolloutLockMs,
    stalledInterval: Math.min(q.rolloutLockMs, 30_000),
    maxStalledCount: q.attempts,
  });
  worker.on('closed', () => void rollout.close());
  return worker;
}
