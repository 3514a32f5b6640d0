// Trajectory files, the one place that reads and writes them: a run's
// trajectories/<groupId>/t<i>.json holds one Trajectory record (core/types.ts) as JSON, and
// `gsteer eval` writes RESULT.trajectories.jsonl, one record per line. Reading names the file
// (and the line) of a bad record as an InputError. A run's file is trusted only when whole
// (readWholeTrajectory): per-update files are renamed into place without fsync
// (util/run-file.ts), so after a crash one may be empty or cut short; a whole one parses,
// names its group and index, and every turn carries equal-length token arrays and the
// adapter version that sampled it (method §5.7). The rollout worker keeps a whole one that is
// also of its very job (workers/episode-record.ts); resume keeps the call records of those.
import { readFileSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic.ts';
import { InputError } from '../util/errors.ts';
import { readJsonl, writeJsonlLine } from '../util/jsonl.ts';
import { writeRunFile } from '../util/run-file.ts';
import type { Trajectory } from './types.ts';

export interface TrajectoryRecord {
  where: string; // file:line
  value: unknown; // as parsed; the reader checks the fields it needs
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`${file}: cannot read (${(e as Error).message}); check the path`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new InputError(`${file}: not a JSON trajectory (${(e as Error).message}); each .json file holds one Trajectory record`);
  }
}

/** One trajectory file (a run's t<i>.json), as the rollout worker wrote it. */
export function readTrajectory(file: string): Trajectory {
  return readJson(file) as Trajectory;
}

/** A run's trajectory file (`durable`: orchestrator.fsyncRunFiles). */
export function writeTrajectory(file: string, t: Trajectory, durable: boolean): Promise<void> {
  return writeRunFile(file, JSON.stringify(t), durable);
}

/** The records of a .jsonl file (one per line) or of a .json file (one), each with its file:line. */
export function readTrajectories(file: string): TrajectoryRecord[] {
  if (file.endsWith('.jsonl')) return readJsonl(file).map((r) => ({ where: `${file}:${r.line}`, value: r.value }));
  return [{ where: `${file}:1`, value: readJson(file) }];
}

/** A .trajectories.jsonl file, one record per line, written whole or not at all. */
export function writeTrajectories(file: string, ts: readonly Trajectory[]): void {
  writeFileAtomic(file, ts.map(writeJsonlLine).join(''));
}

/** The trajectory at `path` if it is whole and of group `groupId`, position `index`; else null (absent, torn, another's). */
export function readWholeTrajectory(path: string, groupId: string, index: number): Trajectory | null {
  let t: Trajectory;
  try {
    t = readTrajectory(path);
  } catch {
    return null;
  }
  const whole =
    !!t &&
    t.version === 1 &&
    t.groupId === groupId &&
    t.index === index &&
    Array.isArray(t.turns) &&
    t.turns.length > 0 &&
    t.turns.every(
      (turn) =>
        Array.isArray(turn.tokens?.promptIds) &&
        Array.isArray(turn.tokens.completionIds) &&
        Array.isArray(turn.tokens.logprobs) &&
        turn.tokens.completionIds.length === turn.tokens.logprobs.length &&
        Number.isInteger(turn.tokens.policyVersion),
    );
  return whole ? t : null;
}
