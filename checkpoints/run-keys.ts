// A run's names in Redis: queue names, job ids and every key. Every key of a run starts with
// runKeyPrefix(queues.prefix, runId) (util/redis-keys.ts): `gsteer:{<runId>}` by default, the run
// id unique per run (`<runName>-<8 hex>`, workers/prepare.ts), so runs sharing a Redis and a
// prefix never touch each other's queues, user states or streams, and a run's cleanup is one
// SCAN pattern. BullMQ custom job ids must not contain ':'; ours are built from (run, epoch,
// step, group, trajectory), so a retried or re-submitted job never duplicates work.
import { globEscape, runKeyPrefix } from '../util/redis-keys.ts';

export const QUEUE = { rollouts: 'rollouts', groups: 'groups', updates: 'updates' } as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

const pad = (n: number, w = 6) => String(n).padStart(w, '0');

export const jobId = {
  update: (runId: string, epoch: number, step: number) => `${runId}-e${epoch}-s${pad(step)}`,
  group: (runId: string, epoch: number, step: number, g: number) => `${runId}-e${epoch}-s${pad(step)}-g${g}`,
  rollout: (runId: string, epoch: number, step: number, g: number, i: number) => `${runId}-e${epoch}-s${pad(step)}-g${g}-t${i}`,
};

/** Group id inside a run: stable across epochs, so file paths are deterministic. */
export const groupIdOf = (step: number, g: number) => `s${pad(step)}-g${g}`;

/** The BullMQ prefix of the run's queues: keys `<run prefix>:<queue>:...`. */
export const queuePrefix = (prefix: string, runId: string) => runKeyPrefix(prefix, runId);

/** The run's own keys besides its queues: user states, the controller's sentinel, worker ids, the owner. */
export const runNamespace = (prefix: string, runId: string) => `${runKeyPrefix(prefix, runId)}:run`;

/** Redis key of the metrics stream. */
export const metricsStreamKey = (prefix: string, runId: string) => `${runKeyPrefix(prefix, runId)}:metrics`;

/** Who drives the run's queues now (workers/queue-owner.ts): {pid, host, startedAt, runDir}, with a TTL. */
export const ownerKey = (prefix: string, runId: string) => `${runNamespace(prefix, runId)}:owner`;

/**
 * SCAN patterns of every key a run leaves in Redis: all of them start with its run prefix,
 * and nothing of another run does (the run id is unique, and ends at the `}` or `:` after
 * it). Glob characters in the prefix or run id are escaped, so the pattern never reaches
 * outside the run.
 */
export function runKeyPatterns(prefix: string, runId: string): string[] {
  return [`${globEscape(runKeyPrefix(prefix, runId))}:*`];
}
