// One update as a BullMQ flow: update (queue `updates`) <- groups (queue `groups`) <- G
// rollouts (queue `rollouts`). Children are retried with exponential backoff; a child that
// runs out of attempts is ignored by its parent (ignoreDependencyOnFailure), so its group
// is dropped (group stage) or its update trains on the other groups. Nothing hangs.
import type { FlowJob, JobsOptions } from 'bullmq';
import { groupSizeOf, groupsPerUpdateOf, type RunConfig } from '../configs/schema.ts';
import { adapterName, runLayout } from '../checkpoints/layout.ts';
import type { GroupJob, RolloutJob, UpdateJob } from './payloads.ts';
import { groupIdOf, jobId, QUEUE } from '../checkpoints/run-keys.ts';
import { rolloutSeed, type PlannedGroup } from './schedule.ts';

export interface UpdatePlan {
  runId: string;
  epoch: number;
  step: number;
  policyVersion: number; // version the rollouts sample from
  groups: (PlannedGroup & { snapshotId: string })[];
  /** Admitted before the group stage of this earlier step was done (GroupJob.afterStep). */
  afterStep?: number;
  /** The policy endpoint's model for the rollouts (default policy-v<version>; a remote Tinker sampler: the version's sampler path). */
  model?: string;
}

/**
 * How many finished jobs each queue keeps (BullMQ removeOnComplete/removeOnFail with a count):
 * enough for the controller to read every group and update job it has not seen yet (at
 * most maxPolicyLag + 1 updates are admitted ahead of the last one it processed; two more
 * for margin). A child's return value or failure lives on in its parent, so rollouts need
 * none for the run itself; they keep as many for inspection. The rest go when the run ends
 * (workers/run-redis.ts).
 */
export function jobRetention(cfg: RunConfig): Record<'updates' | 'groups' | 'rollouts', JobsOptions> {
  const updates = cfg.grpo.maxPolicyLag + 3;
  const keep = (count: number): JobsOptions => ({ removeOnComplete: { count }, removeOnFail: { count } });
  // the groups of an update: grpo.groupsPerUpdate under GRPO, ppo.batchSize under PPO (one rollout each)
  const groups = updates * groupsPerUpdateOf(cfg);
  return { updates: keep(updates), groups: keep(groups), rollouts: keep(groups * groupSizeOf(cfg)) };
}

export function updateFlow(cfg: RunConfig, plan: UpdatePlan): FlowJob {
  const { runId, epoch, step } = plan;
  const rel = runLayout('');
  const keep = jobRetention(cfg);
  const retry: JobsOptions = {
    attempts: cfg.queues.attempts,
    backoff: { type: 'exponential', delay: cfg.queues.backoffMs },
    ignoreDependencyOnFailure: true,
  };
  const groups: FlowJob[] = plan.groups.map((pg, g) => {
    const groupId = groupIdOf(step, g);
    const rollouts: FlowJob[] = Array.from({ length: groupSizeOf(cfg) }, (_, i) => {
      const data: RolloutJob = {
        v: 1,
        runId,
        epoch,
        step,
        groupId,
        index: i,
        instanceId: pg.instanceId,
        userId: pg.userId,
        policyVersion: plan.policyVersion,
        model: plan.model ?? adapterName(plan.policyVersion),
        snapshotId: pg.snapshotId,
        seed: rolloutSeed(cfg.seed, step, g, i),
        trajPath: rel.trajRel(groupId, i),
      };
      return { name: 'rollout', queueName: QUEUE.rollouts, data, opts: { ...retry, ...keep.rollouts, jobId: jobId.rollout(runId, epoch, step, g, i) } };
    });
    const data: GroupJob = {
      v: 1,
      runId,
      epoch,
      step,
      groupId,
      groupIndex: g,
      instanceId: pg.instanceId,
      userId: pg.userId,
      policyVersion: plan.policyVersion,
      snapshotId: pg.snapshotId,
      groupSize: groupSizeOf(cfg),
      groupPath: rel.groupRel(groupId),
      ...(g === 0 && plan.afterStep !== undefined ? { afterStep: plan.afterStep } : {}),
    };
    return { name: 'group', queueName: QUEUE.groups, data, opts: { ...retry, ...keep.groups, jobId: jobId.group(runId, epoch, step, g) }, children: rollouts };
  });
  const data: UpdateJob = { v: 1, runId, epoch, step, policyVersion: step, groupIds: plan.groups.map((_, g) => groupIdOf(step, g)) };
  return {
    name: 'update',
    queueName: QUEUE.updates,
    data,
    opts: {
      attempts: cfg.queues.attempts,
      backoff: { type: 'exponential', delay: cfg.queues.backoffMs },
      jobId: jobId.update(runId, epoch, step),
      ...keep.updates,
    },
    children: groups,
  };
}
