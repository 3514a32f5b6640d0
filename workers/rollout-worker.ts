// Rollout worker: one episode per job (queue `rollouts`), the trajectory written to the run
// directory, its path returned to the group parent. Bad input (InputError: unknown
// instance, a server that rejects the request) becomes UnrecoverableError: not retried.
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { InputError } from '../util/errors.ts';
import type { RunContext } from './context.ts';
import { parsePayload, RolloutJobSchema, type RolloutResult } from './payloads.ts';
import { connect } from '../util/redis.ts';
import { QUEUE, queuePrefix } from '../checkpoints/run-keys.ts';
import { writeRunFile } from './run-file.ts';
import { STALLED_CHECK_MS } from './reclaim.ts';

export function unrecoverable(e: unknown): never {
  if (e instanceof InputError) throw new UnrecoverableError(e.message);
  throw e;
}

export async function startRolloutWorker(ctx: RunContext): Promise<Worker[]> {
  const rollout = await ctx.parts.rollout();
  const process = async (job: Job): Promise<RolloutResult> => {
    const p = parsePayload(RolloutJobSchema, job.data, 'rollout');
    if (p.runId !== ctx.info.runId) throw new UnrecoverableError(`job ${job.id} belongs to run ${p.runId}, this worker serves ${ctx.info.runId}`);
    const instance = ctx.instances.get(p.instanceId);
    if (!instance) throw new UnrecoverableError(`instance ${p.instanceId} is not in ${ctx.cfg.data.instances.join(', ')}`);
    const traj = await rollout.run({ job: p, instance, policyUrl: ctx.policyUrl }).catch(unrecoverable);
    await writeRunFile(ctx.layout.abs(p.trajPath), JSON.stringify(traj), ctx.cfg.orchestrator.fsyncRunFiles);
    return { index: p.index, trajPath: p.trajPath };
  };
  const q = ctx.cfg.queues;
  // A BullMQ worker fetches its jobs one at a time (one Redis round trip each), so the k-th
  // rollout of a fresh wave would start k round trips after the first. Several workers, each
  // with a share of the concurrency, fetch in parallel (orchestrator.rolloutFetchers, each
  // holding two Redis connections).
  const c = ctx.cfg.rollout.concurrency;
  const fetchers = Math.min(c, ctx.cfg.orchestrator.rolloutFetchers);
  const connections = Array.from({ length: fetchers }, () => connect(q.redisUrl));
  const workers = connections.map((connection, k) => new Worker(QUEUE.rollouts, process, {
    connection,
    prefix: queuePrefix(q.prefix, ctx.info.runId),
    concurrency: Math.floor(c / fetchers) + (k < c % fetchers ? 1 : 0),
    lockDuration: q.rolloutLockMs,
    stalledInterval: Math.min(q.rolloutLockMs, STALLED_CHECK_MS),
    maxStalledCount: q.attempts,
  }));
  let open = workers.length;
  // BullMQ leaves a connection it was given open: close ours with the worker (an in-process run exits).
  workers.forEach((w, k) => w.on('closed', () => {
    connections[k]!.disconnect();
    if (--open === 0) void rollout.close();
  }));
  return workers;
}
