// The controller's side of the partial-group policy (method §5.12, grpo.groupDeadlineMs): every
// group of update `s` still waiting for episodes when the deadline has passed is dropped as
// late, unless its group stage claimed it first (late-groups.ts). Its group file says so
// (dropped, `late`: its unfinished episodes), its update no longer waits for it (BullMQ
// removeChildDependency), its unfinished episodes are cancelled, and the next group's stage,
// which waits for it, is started.
import { Job, type Queue } from 'bullmq';
import type { RunConfig } from '../configs/schema.ts';
import type { RunLayout } from '../checkpoints/layout.ts';
import type { RunInfo } from '../checkpoints/run-info.ts';
import { groupIdOf, jobId } from '../checkpoints/run-keys.ts';
import type { RedisClient } from '../util/redis.ts';
import { droppedGroup, promoteGroup } from './group-worker.ts';
import { cancelChannel, claimGroup, claimKey, publishCancel, unfinishedEpisodes } from './late-groups.ts';
import { GroupJobSchema, parsePayload } from './payloads.ts';
import { writeRunFile } from '../util/run-file.ts';

export interface LateCutDeps {
  cfg: RunConfig;
  info: RunInfo;
  layout: RunLayout;
  redis: RedisClient;
  groups: Queue;
  log: (msg: string) => void;
}

/** Cut the `waiting` groups (indexes) of update `s` that this call wins; each one cut joins `done`. */
export async function cutLateGroups(d: LateCutDeps, s: number, waiting: readonly number[], done: Set<number>): Promise<void> {
  const { cfg, info, layout, redis } = d;
  const { prefix } = cfg.queues;
  for (const g of waiting) {
    const groupId = groupIdOf(s, g);
    if ((await claimGroup(redis, claimKey(prefix, info.runId, groupId), 'late')) !== 'late') continue;
    const job = await Job.fromId(d.groups, jobId.group(info.runId, info.epoch, s, g));
    if (!job) continue; // gone: the run's keys were lost; the controller's next turn says so
    const unfinished = await unfinishedEpisodes(job);
    const p = parsePayload(GroupJobSchema, job.data, 'group');
    const reason = `late: ${unfinished} of ${p.groupSize} episodes unfinished ${cfg.grpo.groupDeadlineMs} ms after the first group of update ${s} finished (grpo.groupDeadlineMs)`;
    await writeRunFile(layout.abs(p.groupPath), `${JSON.stringify({ ...droppedGroup(p, reason), late: unfinished })}\n`, cfg.orchestrator.fsyncRunFiles);
    await job.removeChildDependency();
    await publishCancel(
      redis,
      cancelChannel(prefix, info.runId),
      Array.from({ length: p.groupSize }, (_, i) => jobId.rollout(info.runId, info.epoch, s, g, i)),
    );
    done.add(g);
    d.log(`group ${groupId} (instance ${p.instanceId}) dropped: ${reason}`);
    await promoteGroup(d.groups, jobId.group(info.runId, info.epoch, s, g + 1));
  }
}
