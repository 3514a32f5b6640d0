// The orchestration shortcuts (bench/orchestrator/README.md) and the switch that turns each
// off again, so the benchmark and the profile measure old against new in one invocation on a
// noisy machine. `GSTEER_ORCH_DISABLE` (benchmarks only): a comma list of
//   events  — the controller finds finished jobs by polling every queues.pollMs only
//   early   — update s + 1 is admitted only after the group stage of s, even when no user of
//             s + 1 is in s, and only after update s - 1 - lag is recorded (metrics, checkpoint)
//   promote — an ordered group job waits out its queues.pollMs delay instead of being promoted
//             when its predecessor finishes
//   fsync   — per-update files (trajectories, group files, user-state dumps, adapter
//             versions) are fsynced
//   fetchers — a rollout worker process runs one BullMQ worker, which fetches jobs one by one
// or `all`. Read on every call, so one process can run both.
const NAMES = ['events', 'early', 'promote', 'fsync', 'fetchers'] as const;
export type Shortcut = (typeof NAMES)[number];

export function shortcutOn(name: Shortcut): boolean {
  const v = process.env.GSTEER_ORCH_DISABLE ?? '';
  if (!v) return true;
  const off = v.split(',').map((s) => s.trim());
  for (const o of off)
    if (o !== 'all' && !(NAMES as readonly string[]).includes(o)) throw new Error(`GSTEER_ORCH_DISABLE=${v}: unknown "${o}"; expected a comma list of ${NAMES.join(', ')} or "all"`);
  return !off.includes('all') && !off.includes(name);
}
