// The resume drill's count (issue 35 item 3): after a run SIGKILLed with episodes in flight
// and resumed, what the run directory says of every planned episode: trained exactly once
// (a path in exactly one kept group file), lost (in no group file, its group not dropped),
// duplicated (in two); its policy calls on record (llm_calls.jsonl, tagged by group and
// episode) against its turns (more: work done twice; fewer: records lost); and how many
// in-flight episodes the resumed run kept (episodes/reused) instead of sampling again.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import type { Trajectory } from '../../core/types.ts';
import type { MetricsRecord } from '../../monitor/sink.ts';

export interface DrillCount {
  planned: number;
  trainedOnce: number;
  duplicated: number;
  lost: number;
  inDroppedGroups: number;
  reused: number;
  /** Trained episodes whose ok policy calls on record equal their turns / differ. */
  callsMatchTurns: number;
  callsMismatch: number;
}

export function countDrill(runDir: string, metrics: MetricsRecord[], planned: number, groupSize: number): DrillCount {
  const trained = new Map<string, number>();
  let inDroppedGroups = 0;
  const groupsDir = join(runDir, 'groups');
  for (const name of existsSync(groupsDir) ? readdirSync(groupsDir).filter((n) => /^s\d{6}-g\d+\.json$/.test(n)) : []) {
    const g = readGroupFile(join(groupsDir, name));
    if (g.dropped) inDroppedGroups += groupSize;
    for (const p of g.trajPaths) trained.set(p, (trained.get(p) ?? 0) + 1);
  }
  const calls = new Map<string, number>();
  const callsFile = join(runDir, 'llm_calls.jsonl');
  for (const line of existsSync(callsFile) ? readFileSync(callsFile, 'utf8').split('\n') : []) {
    if (!line.trim()) continue;
    const c = JSON.parse(line) as { role: string; status: string; groupId?: string; episode?: number };
    if (c.role === 'policy' && c.status === 'ok' && c.groupId !== undefined)
      calls.set(`${c.groupId}/t${c.episode}.json`, (calls.get(`${c.groupId}/t${c.episode}.json`) ?? 0) + 1);
  }
  let match = 0;
  let mismatch = 0;
  for (const path of trained.keys()) {
    const t = JSON.parse(readFileSync(join(runDir, path), 'utf8')) as Trajectory;
    const key = path.replace(/^trajectories\//, '');
    if ((calls.get(key) ?? 0) === t.turns.length) match++;
    else mismatch++;
  }
  const once = [...trained.values()].filter((n) => n === 1).length;
  return {
    planned,
    trainedOnce: once,
    duplicated: [...trained.values()].filter((n) => n > 1).length,
    lost: planned - trained.size - inDroppedGroups,
    inDroppedGroups,
    reused: metrics.reduce((s, m) => s + Number(m['episodes/reused'] ?? 0), 0),
    callsMatchTurns: match,
    callsMismatch: mismatch,
  };
}
