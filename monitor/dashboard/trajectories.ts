// What the policy did in one update, for the dashboard's table: each group's trajectories
// (RUN/groups/<groupId>.json for rewards, RUN/trajectories/<groupId>/t<i>.json for the
// turns), without the token arrays. Paths come from the run's own files and must stay
// inside the run directory.
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import type { RunLayout } from '../../checkpoints/layout.ts';
import { readTrajectory } from '../../core/trajectory-file.ts';
import type { Trajectory } from '../../core/types.ts';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import { trajectoryView } from '../../rollout/env/view.ts';

import type { TurnView } from '../../rollout/env/types.ts';

export interface TrajectoryView {
  groupId: string;
  instanceId: string;
  userId: string;
  index: number;
  best: boolean;
  reward: number;
  components: Record<string, number>;
  termination: string;
  invalidReason?: string;
  turns: TurnView[];
  refinedQuery: string | null;
}

export interface GroupView {
  groupId: string;
  dropped: boolean;
  reason?: string;
  trajectories: TrajectoryView[];
}

const GROUP_FILE = /^s(\d{6})-g(\d+)\.json$/;
const clip = (s: string, n = 400) => (s.length > n ? `${s.slice(0, n)}…` : s);

function runTrajectory(layout: RunLayout, rel: string): Trajectory | null {
  const path = resolve(layout.root, rel);
  if (!path.startsWith(layout.root + sep) || !existsSync(path)) return null;
  return readTrajectory(path);
}

/** Steps that have group files, ascending. */
export function stepsWithGroups(layout: RunLayout): number[] {
  const dir = join(layout.root, 'groups');
  if (!existsSync(dir)) return [];
  const steps = new Set<number>();
  for (const name of readdirSync(dir)) {
    const m = GROUP_FILE.exec(name);
    if (m) steps.add(Number(m[1]));
  }
  return [...steps].sort((a, b) => a - b);
}

/** The groups of update `step` with their trajectories (empty when the update has none on disk). */
export function updateTrajectories(layout: RunLayout, step: number): GroupView[] {
  const dir = join(layout.root, 'groups');
  if (!existsSync(dir)) return [];
  const names = readdirSync(dir)
    .map((n) => GROUP_FILE.exec(n))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) === step)
    .sort((a, b) => Number(a[2]) - Number(b[2]));
  return names.map((m) => {
    const g = readGroupFile(join(dir, m[0]));
    const trajectories = g.trajPaths.flatMap((rel, i): TrajectoryView[] => {
      const t = runTrajectory(layout, rel);
      const score = g.scores[i];
      if (!t || !score) return [];
      return [
        {
          groupId: g.groupId,
          instanceId: g.instanceId,
          userId: g.userId,
          index: i,
          best: g.best === i,
          reward: score.reward,
          components: score.components,
          termination: t.termination,
          ...(t.invalidReason ? { invalidReason: t.invalidReason } : {}),
          turns: trajectoryView(t, clip), // method §13: every environment's turns
          refinedQuery: t.refinedQuery,
        },
      ];
    });
    return { groupId: g.groupId, dropped: g.dropped, ...(g.reason ? { reason: g.reason } : {}), trajectories };
  });
}
