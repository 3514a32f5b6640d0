// Group stage (queue `groups`), run by BullMQ once all G rollout children are done: score
// every trajectory (method §4), pick the best, apply its online user-state update (method §6),
// write groups/<groupId>.json. A group with a failed rollout is dropped and logged; the
// update goes on with the other groups. So is a group the controller dropped as late
// (grpo.groupDeadlineMs, workers/late-groups.ts). Advantages are computed by the update stage, over
// all groups of the update, because batch-std scaling needs them together.
import { existsSync } from 'node:fs';
import { DelayedError, Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import { readTrajectory } from '../core/trajectory-file.ts';
import type { RunContext } from './context.ts';
import type { Scored } from './parts.ts';
import { bestIndex, episodeCounts, readGroupFile, type GroupFile } from '../checkpoints/group-file.ts';
import { GroupJobSchema, parsePayload, RolloutResultSchema, type GroupJob, type GroupResult } from './payloads.ts';
import { connect } from '../util/redis.ts';
import { groupIdOf, jobId, QUEUE, queuePrefix } from '../checkpoints/run-keys.ts';
import { writeRunFile } from '../util/run-file.ts';
import { STALLED_CHECK_MS } from './reclaim.ts';
import { unrecoverable } from './rollout-worker.ts';
import { claimGroup, claimKey } from './late-groups.ts';

/** The group file of a group dropped for `reason` (a failed rollout, or late: the controller writes it then). */
export function droppedGroup(p: GroupJob, reason: string): GroupFile {
  return {
    v: 1,
    groupId: p.groupId,
    step: p.step,
    instanceId: p.instanceId,
    userId: p.userId,
    policyVersion: p.policyVersion,
    snapshotId: p.snapshotId,
    dropped: true,
    reason,
    trajPaths: [],
    scores: [],
    best: -1,
    episodes: [],
    applied: false,
  };
}

export async function startGroupWorker(ctx: RunContext, log: (msg: string) => void): Promise<Worker> {
  const reward = await ctx.parts.reward();
  const users = await ctx.parts.users();
  const write = (rel: string, g: GroupFile) => writeRunFile(ctx.layout.abs(rel), `${JSON.stringify(g)}\n`, ctx.cfg.orchestrator.fsyncRunFiles);
  const q = ctx.cfg.queues;
  const deadline = ctx.cfg.grpo.groupDeadlineMs !== null;
  const queueConnection = connect(q.redisUrl);
  const prefix = queuePrefix(q.prefix, ctx.info.runId);
  const groups = new Queue(QUEUE.groups, { connection: queueConnection, prefix });
  /**
   * Group g-1 of the same update is finished (applied, dropped, or failed for good); for
   * group 0 of an update admitted early, the user states of update afterStep are dumped.
   */
  const previousDone = async (p: GroupJob): Promise<boolean> => {
    if (p.groupIndex === 0) return p.afterStep === undefined || existsSync(ctx.layout.stepStates(p.afterStep));
    const prev = ctx.layout.abs(ctx.layout.groupRel(groupIdOf(p.step, p.groupIndex - 1)));
    if (existsSync(prev)) {
      const g = readGroupFile(prev);
      if (g.dropped || g.applied) return true;
    }
    const job = await Job.fromId(groups, jobId.group(p.runId, p.epoch, p.step, p.groupIndex - 1));
    return !job || (await job.getState()) === 'failed';
  };
  const process = async (job: Job, token?: string): Promise<GroupResult> => {
    const p = parsePayload(GroupJobSchema, job.data, 'group');
    if (p.runId !== ctx.info.runId)
      throw new UnrecoverableError(
        `job ${job.id} belongs to run ${p.runId}, this worker serves ${ctx.info.runId} (${ctx.layout.root}); start workers with --run pointing at the job's run directory`,
      );
    // User-state updates of one update's groups apply in group order, whatever order their
    // rollouts finish in, so two groups of the same user replay identically (method §10).
    // The wait is a delay that the predecessor cuts short (promoteGroup); the delay is the
    // fallback (pollMs without promotion; with it and orchestrator.sparseGroupPolls, longer: at
    // fleet scale hundreds of groups waiting on pollMs each cycle delayed -> waiting -> active
    // several times a second, most of the run's Redis commands; bench/fleet measures both).
    if (!(await previousDone(p))) {
      await job.moveToDelayed(
        Date.now() + (ctx.cfg.orchestrator.promoteGroups && ctx.cfg.orchestrator.sparseGroupPolls ? Math.max(q.pollMs, ORDER_FALLBACK_MS) : q.pollMs),
        token,
      );
      throw new DelayedError();
    }
    const result = await stage(job, p);
    if (ctx.cfg.orchestrator.promoteGroups) await promoteGroup(groups, jobId.group(p.runId, p.epoch, p.step, p.groupIndex + 1));
    return result;
  };
  const stage = async (job: Job, p: GroupJob): Promise<GroupResult> => {
    const instance = ctx.instances.get(p.instanceId);
    if (!instance) throw new UnrecoverableError(`instance ${p.instanceId} is not in the dataset`);
    // With a deadline the controller may have dropped this group as late (it wrote the group
    // file); else this stage claims it, and from then on the group cannot be cut.
    if (deadline && (await claimGroup(queueConnection, claimKey(q.prefix, p.runId, p.groupId), 'stage')) === 'late')
      return { groupId: p.groupId, dropped: true, reason: 'late (grpo.groupDeadlineMs)', groupPath: p.groupPath };
    const path = ctx.layout.abs(p.groupPath);
    // A retry after the user-state update was applied must not apply it twice: either the
    // file says so, or the user's version moved past the one recorded just before applying
    // (a crash between applying and marking; group stages run one at a time, in order).
    if (existsSync(path)) {
      const prev = readGroupFile(path);
      if (prev.applied) return { groupId: p.groupId, dropped: false, groupPath: p.groupPath };
      if (!prev.dropped && prev.userVersionBefore !== undefined && (await users.version(p.userId)) > prev.userVersionBefore) {
        log(`group ${p.groupId}: user-state update found applied before a crash; not applying it again`);
        await write(p.groupPath, { ...prev, applied: true });
        return { groupId: p.groupId, dropped: false, groupPath: p.groupPath };
      }
    }
    const failures = await job.getIgnoredChildrenFailures();
    const results = Object.values(await job.getChildrenValues()).map((v) => RolloutResultSchema.parse(v));
    if (Object.keys(failures).length || results.length !== p.groupSize) {
      const reason = `${Object.keys(failures).length} of ${p.groupSize} rollouts failed: ${Object.values(failures).join(' | ').slice(0, 400)}`;
      log(`group ${p.groupId} (step ${p.step}, instance ${p.instanceId}) dropped: ${reason}`);
      await write(p.groupPath, droppedGroup(p, reason));
      return { groupId: p.groupId, dropped: true, reason, groupPath: p.groupPath };
    }
    results.sort((a, b) => a.index - b.index);
    const trajs = results.map((r) => readTrajectory(ctx.layout.abs(r.trajPath)));
    const scores: Scored[] = [];
    for (const t of trajs) scores.push(await reward.score(t, instance).catch(unrecoverable));
    const best = bestIndex(scores);
    const userVersionBefore = await users.version(p.userId);
    const episodes = trajs.map((t, i) => episodeCounts(t, results[i]!.reused === true));
    const g: GroupFile = { ...droppedGroup(p, ''), dropped: false, trajPaths: results.map((r) => r.trajPath), scores, best, episodes, userVersionBefore };
    delete g.reason;
    await write(p.groupPath, g);
    await users.applyBest(
      trajs.map((trajectory, i) => ({ trajectory, reward: (scores[i] as Scored).reward })),
      instance,
    );
    await write(p.groupPath, { ...g, applied: true });
    return { groupId: p.groupId, dropped: false, groupPath: p.groupPath };
  };
  const connection = connect(q.redisUrl);
  const worker = new Worker(QUEUE.groups, process, {
    connection,
    prefix,
    concurrency: 1,
    lockDuration: q.rolloutLockMs,
    stalledInterval: Math.min(q.rolloutLockMs, STALLED_CHECK_MS),
    maxStalledCount: q.attempts,
  });
  worker.on(
    'closed',
    () =>
      void users
        .close()
        .then(() => groups.close())
        .then(() => {
          connection.disconnect();
          queueConnection.disconnect();
        }),
  );
  return worker;
}

/** How long a group job waiting for its predecessor sleeps when nothing promotes it (a predecessor that failed for good). */
export const ORDER_FALLBACK_MS = 2000;

/**
 * Start a group job that waits (delayed) for the one just finished, instead of letting it sit
 * out its delay. A job caught between its check and its move to delayed is retried briefly;
 * one that is not there or not delayed is left alone (it has not started yet, or ran already).
 */
export async function promoteGroup(groups: Queue, id: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const job = await Job.fromId(groups, id);
    if (!job) return;
    const state = await job.getState();
    // A job in its retry backoff (an earlier attempt failed) keeps its backoff.
    if (state === 'delayed') return job.failedReason ? undefined : void (await job.promote().catch(() => undefined));
    if (state !== 'active') return;
    await new Promise((r) => setTimeout(r, 4)); // caught between its check and its move to delayed: up to ~200 ms
  }
}
