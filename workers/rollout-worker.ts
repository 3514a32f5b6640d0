// Rollout worker: one episode per job (queue `rollouts`), the trajectory written to the run
// directory, its path returned to the group parent. Bad input (InputError: unknown
// instance, a server that rejects the request) becomes UnrecoverableError: not retried.
// Every turn is tagged with the job's adapter version; a whole trajectory of this very job
// already on disk (a resumed run's finished in-flight episode) is kept, not sampled again
// (workers/episode-record.ts). With grpo.groupDeadlineMs, a rollout of a late group is
// cancelled (workers/late-groups.ts).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { InputError } from '../util/errors.ts';
import { withCallEpisode } from '../endpoints/index.ts';
import type { RunContext } from './context.ts';
import { parsePayload, RolloutJobSchema, type RolloutResult } from './payloads.ts';
import { connect } from '../util/redis.ts';
import { QUEUE, queuePrefix } from '../checkpoints/run-keys.ts';
import { writeTrajectory } from '../core/trajectory-file.ts';
import { STALLED_CHECK_MS } from './reclaim.ts';
import { reusableTrajectory, tagVersions } from './episode-record.ts';
import { abortable, cancelChannel, claimKey, followCancels, isLate } from './late-groups.ts';

export function unrecoverable(e: unknown): never {
  if (e instanceof InputError) throw new UnrecoverableError(e.message);
  throw e;
}

const late = (groupId: string) => new UnrecoverableError(`late: group ${groupId} passed grpo.groupDeadlineMs and was dropped; episode cancelled`);

export async function startRolloutWorker(ctx: RunContext): Promise<Worker[]> {
  const rollout = await ctx.parts.rollout();
  const q = ctx.cfg.queues;
  const deadline = ctx.cfg.grpo.groupDeadlineMs !== null;
  // Only with a deadline: the claim check at start, and the channel that cancels late episodes.
  const control = deadline ? connect(q.redisUrl) : null;
  const process = async (job: Job, _token?: string, signal?: AbortSignal): Promise<RolloutResult> => {
    const p = parsePayload(RolloutJobSchema, job.data, 'rollout');
    if (p.runId !== ctx.info.runId) throw new UnrecoverableError(`job ${job.id} belongs to run ${p.runId}, this worker serves ${ctx.info.runId}`);
    const instance = ctx.instances.get(p.instanceId);
    if (!instance) throw new UnrecoverableError(`instance ${p.instanceId} is not in ${ctx.cfg.data.instances.join(', ')}`);
    const path = ctx.layout.abs(p.trajPath);
    if (reusableTrajectory(path, p)) return { index: p.index, trajPath: p.trajPath, reused: true };
    if (control && (await isLate(control, claimKey(q.prefix, p.runId, p.groupId)))) throw late(p.groupId);
    // Its LLM calls are tagged with the episode, so a resume keeps them with a kept trajectory.
    const run = withCallEpisode(p.index, () => rollout.run({ job: p, instance, policyUrl: ctx.policyUrl, ...(signal ? { signal } : {}) })).catch(unrecoverable);
    const traj = tagVersions(await abortable(run, signal, () => late(p.groupId)), p);
    await writeTrajectory(path, traj, ctx.cfg.orchestrator.fsyncRunFiles);
    return { index: p.index, trajPath: p.trajPath };
  };
  // A BullMQ worker fetches its jobs one at a time (one Redis round trip each), so the k-th
  // rollout of a fresh wave would start k round trips after the first. Several workers, each
  // with a share of the concurrency, fetch in parallel (orchestrator.rolloutFetchers, each
  // holding two Redis connections).
  const c = ctx.cfg.rollout.concurrency;
  const fetchers = Math.min(c, ctx.cfg.orchestrator.rolloutFetchers);
  const connections = Array.from({ length: fetchers }, () => connect(q.redisUrl));
  const workers = connections.map(
    (connection, k) =>
      new Worker(QUEUE.rollouts, process, {
        connection,
        prefix: queuePrefix(q.prefix, ctx.info.runId),
        concurrency: Math.floor(c / fetchers) + (k < c % fetchers ? 1 : 0),
        lockDuration: q.rolloutLockMs,
        stalledInterval: Math.min(q.rolloutLockMs, STALLED_CHECK_MS),
        maxStalledCount: q.attempts,
      }),
  );
  const sub = deadline ? connect(q.redisUrl) : null;
  if (sub) await followCancels(sub, cancelChannel(q.prefix, ctx.info.runId), workers);
  let open = workers.length;
  // BullMQ leaves a connection it was given open: close ours with the worker (an in-process run exits).
  workers.forEach((w, k) =>
    w.on('closed', () => {
      connections[k]!.disconnect();
      if (--open > 0) return;
      sub?.disconnect();
      control?.disconnect();
      void rollout.close();
    }),
  );
  return workers;
}
