// A run's names in Redis: queue names, job ids and the metrics stream key. BullMQ custom job
// ids must not contain ':'; ours are built from (run, epoch, step, group, trajectory), so a
// retried or re-submitted job never duplicates work.
import { globEscape } from '../util/redis-keys.ts';

export const QUEUE = { rollouts: 'rollouts', groups: 'groups', updates: 'updates' } as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

const pad = (n: number, w = 6) => String(n).padStart(w, '0');

export const jobId = {
  update: (runId: string, epoch: number, step: number) => `${runId}-e${epoch}-s${pad(step)}`,
  group: (runId: string, epoch: number, step: number, g: number) => `${runId}-e${epoch}-s${pad(step)}-g${g}`,
  rollout: (runId: string, epoch: number, step: number, g: number, i: number) =>
    `${runId}-e${epoch}-s${pad(step)}-g${g}-t${i}`,
};

/** Group id inside a run: stable across epochs, so file paths are deterministic. */
export const groupIdOf = (step: number, g: number) => `s${pad(step)}-g${g}`;

/** Redis key of the metrics stream (same prefix as the queues, so a hash tag keeps it on one slot). */
export const metricsStreamKey = (prefix: string, runId: string) => `${prefix}:metrics:${runId}`;

/**
 * SCAN patterns of every key a run leaves in Redis: its three queues (BullMQ keys
 * `<prefix>:<queue>:...`), its own namespace `<prefix>:run:<runId>:...` (user states, the
 * controller's sentinel) and its metrics stream. All under the prefix; glob characters in
 * the prefix or run id are escaped, so a pattern never reaches outside it.
 */
export function runKeyPatterns(prefix: string, runId: string): string[] {
  const p = globEscape(prefix);
  const r = globEscape(runId);
  return [...Object.values(QUEUE).map((q) => `${p}:${q}:*`), `${p}:run:${r}:*`, globEscape(metricsStreamKey(prefix, runId))];
}
