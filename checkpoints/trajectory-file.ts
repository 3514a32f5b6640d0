// A trajectory file as a resumed run finds it (trajectories/<groupId>/t<i>.json): whole, or
// not to be trusted. Per-update files are renamed into place without fsync
// (workers/run-file.ts), so after a crash one may be empty or cut short; a whole one parses,
// names its group and index, and every turn carries equal-length token arrays and the
// adapter version that sampled it (method §5.7). The rollout worker keeps a whole one that is
// also of its very job (workers/episode-record.ts); resume keeps the call records of those.
import { existsSync, readFileSync } from 'node:fs';
import type { Trajectory } from '../core/types.ts';

export function readWholeTrajectory(path: string, groupId: string, index: number): Trajectory | null {
  if (!existsSync(path)) return null;
  let t: Trajectory;
  try {
    t = JSON.parse(readFileSync(path, 'utf8')) as Trajectory;
  } catch {
    return null;
  }
  const whole = !!t && t.version === 1 && t.groupId === groupId && t.index === index && Array.isArray(t.turns) && t.turns.length > 0
    && t.turns.every((turn) => Array.isArray(turn.tokens?.promptIds) && Array.isArray(turn.tokens.completionIds) && Array.isArray(turn.tokens.logprobs)
      && turn.tokens.completionIds.length === turn.tokens.logprobs.length && Number.isInteger(turn.tokens.policyVersion));
  return whole ? t : null;
}
