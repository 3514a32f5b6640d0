// Reading recorded trajectories for `gsteer eval --trajectories` (no policy needed): a
// JSONL file of Trajectory records (core/types.ts), one JSON file of one record, or a
// run's trajectories/ directory (every *.json / *.jsonl below it, in sorted path order).
// Only the fields evaluation reads are checked; a bad record names file, line and field.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readTrajectories } from '../core/trajectory-file.ts';
import { InputError } from '../util/errors.ts';
import type { EpisodeOutcome } from './score.ts';

const count = z.number().int().min(0);

export const EpisodeOutcomeSchema = z
  .object({
    instanceId: z.string().min(1),
    termination: z.enum(['stop', 'invalid', 'max_turns']),
    refinedQuery: z.string().nullable(),
    askCount: count,
    retrieveCount: count,
  })
  .loose();

export interface LocatedOutcome extends EpisodeOutcome {
  where: string; // file:line
}

function listFiles(path: string): string[] {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    throw new InputError(`--trajectories ${path}: cannot read (${(e as Error).message}); pass a JSONL file, a JSON file or a directory of them`);
  }
  if (!st.isDirectory()) return [path];
  return readdirSync(path, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.json') || f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(path, f));
}

export function readOutcomes(path: string): LocatedOutcome[] {
  const out: LocatedOutcome[] = [];
  const problems: string[] = [];
  for (const file of listFiles(path)) {
    for (const { where, value } of readTrajectories(file)) {
      const r = EpisodeOutcomeSchema.safeParse(value);
      if (!r.success) {
        for (const i of r.error.issues)
          problems.push(
            `${where}: ${i.path.join('.') || '(root)'}: ${i.message}; a trajectory needs instanceId, termination, refinedQuery, askCount, retrieveCount (core/types.ts)`,
          );
        continue;
      }
      const d = r.data;
      if (d.termination === 'stop' && d.refinedQuery === null)
        problems.push(`${where}: refinedQuery: null but termination is "stop"; a stopped episode has its q*`);
      out.push({
        instanceId: d.instanceId,
        termination: d.termination,
        refinedQuery: d.refinedQuery,
        askCount: d.askCount,
        retrieveCount: d.retrieveCount,
        where,
      });
    }
  }
  if (problems.length) throw new InputError(`${problems.length} problem(s) in --trajectories ${path}:\n${problems.join('\n')}`, problems);
  if (out.length === 0) throw new InputError(`--trajectories ${path}: no trajectory records found; pass a JSONL file or a run's trajectories/ directory`);
  return out;
}
