// Put a run directory back to the state of one checkpoint before `gsteer resume`: adapter
// versions (adapters/), metrics.jsonl cut to the checkpoint's lines, the group files and the
// LLM call records (llm_calls.jsonl) of later updates removed (a group file marks its
// user-state update as applied; a stale one would skip the re-run's update). Trajectory
// files of later updates stay: the episodes that were in flight and had finished are kept
// by the rollout worker when whole and of the same job (workers/episode-record.ts), the
// others are sampled again from the same seeds (method §10.1).
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { filterLines, truncateLines } from '../util/jsonl.ts';
import { removeStrayTemps } from '../util/atomic.ts';
import { InputError } from '../util/errors.ts';
import { restoreAdapterVersions, type LoadedCheckpoint } from './checkpoint.ts';
import { numberedName, type RunLayout } from './layout.ts';
import { readWholeTrajectory } from '../core/trajectory-file.ts';

const stepOfGroupName = (name: string) => {
  const m = /^s(\d{6})-g\d+(\.json)?$/.exec(name);
  return m ? Number(m[1]) : null;
};

function removeAfter(dir: string, step: number, stepOf: (name: string) => number | null): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const s = stepOf(name);
    if (s !== null && s > step) rmSync(join(dir, name), { recursive: true, force: true });
  }
}

/** The checkpoint's user-state records (one JSON object per line, as the store dumped them). */
export function readCheckpointStates(ckptDir: string): unknown[] {
  const file = join(ckptDir, 'user_states.jsonl');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      try {
        return JSON.parse(l) as unknown;
      } catch (e) {
        throw new InputError(`${file}:${i + 1}: not valid JSON (${(e as Error).message})`);
      }
    });
}

export function restoreRunDir(layout: RunLayout, ckpt: LoadedCheckpoint): unknown[] {
  const step = ckpt.state.step;
  removeStrayTemps(layout.root); // temp files and folders of writers a crash or a full disk stopped
  removeAfter(layout.adapters, step, (n) => numberedName(n, 'policy-v'));
  restoreAdapterVersions(ckpt.dir, step, layout.adapter);
  removeAfter(join(layout.root, 'groups'), step, stepOfGroupName);
  removeAfter(join(layout.root, 'steps'), step, (n) => numberedName(n, 'step-'));
  truncateLines(layout.metrics, ckpt.state.metricsLines);
  // The LLM call records of later updates' groups go (the re-run records its own, else they
  // count twice), except those of an episode whose trajectory is whole: the rollout worker keeps it.
  const kept = new Map<string, boolean>();
  const whole = (groupId: string, index: number) => {
    const key = `${groupId}/${index}`;
    if (!kept.has(key)) kept.set(key, readWholeTrajectory(layout.abs(layout.trajRel(groupId, index)), groupId, index) !== null);
    return kept.get(key)!;
  };
  filterLines(layout.llmCalls, (r) => {
    const { groupId, episode } = r as { groupId?: unknown; episode?: unknown };
    const s = typeof groupId === 'string' ? stepOfGroupName(groupId) : null;
    return s === null || s <= step || (typeof episode === 'number' && whole(groupId as string, episode));
  });
  return readCheckpointStates(ckpt.dir);
}
