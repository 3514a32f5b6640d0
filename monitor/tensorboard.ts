// TensorBoard scalars beside metrics.jsonl: RUN/events.out.tfevents.<secs>.<hostname>, so
// `tensorboard --logdir runs/` shows every run with no conversion. One Event per update
// (step = the record's step) holding one Summary.Value per numeric key of the record, as a
// TF1 `simple_value` (float32): both TensorBoard readers (the Python data_compat migration
// and the Rust data server's `into_scalar`) turn a simple_value into a scalars-plugin
// point, so the TF2 tensor+metadata form would add bytes and nothing a reader needs.
//
// The file always holds exactly the records of metrics.jsonl: opening it (every start of
// the controller, so after a resume has cut metrics.jsonl to the checkpoint) rewrites it
// from those records, then each update appends one event, as metrics.jsonl appends a line.
import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { fsyncDir, writeFileAtomic } from '../util/atomic.ts';
import type { MetricsRecord } from './record.ts';
import { frameRecord, readRecords } from './tfrecord.ts';

// The fields gsteer writes, numbered as in tensorboard/compat/proto/event.proto and summary.proto.
const root = protobuf.parse(`syntax = "proto3";
package tensorboard;
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what { string file_version = 3; Summary summary = 5; }
}
message Summary {
  message Value { string tag = 1; oneof value { float simple_value = 2; } }
  repeated Value value = 1;
}`).root;
const Event = root.lookupType('tensorboard.Event');

export const FILE_VERSION = 'brain.Event:2';
const EVENT_FILE = /^events\.out\.tfevents\.(\d+)\./;
/** Where a rewrite is built: no "tfevents" in the name, so TensorBoard never reads it half-done. */
const REBUILD = '.tensorboard-rebuild';

export const eventFileName = (secs: number, host: string) => `events.out.tfevents.${secs}.${host}`;

/** [tag, value] per numeric key of a metrics record; `step` is the event's step, not a tag. */
export function scalarsOf(rec: MetricsRecord): [string, number][] {
  return Object.entries(rec).filter((e): e is [string, number] => e[0] !== 'step' && typeof e[1] === 'number');
}

export function versionEvent(wallTime: number): Buffer {
  return frameRecord(Event.encode(Event.create({ wallTime, fileVersion: FILE_VERSION })).finish());
}

export function scalarEvent(rec: MetricsRecord, wallTime: number): Buffer {
  const step = rec.step;
  if (typeof step !== 'number' || !Number.isSafeInteger(step)) throw new Error(`metrics record without an integer step: ${JSON.stringify(rec).slice(0, 200)}`);
  const value = scalarsOf(rec).map(([tag, simpleValue]) => ({ tag, simpleValue }));
  return frameRecord(Event.encode(Event.create({ wallTime, step, summary: { value } })).finish());
}

/** step -> wall_time of the summary events in these files (a rewrite keeps when each point was written). */
function wallTimes(files: string[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const f of files) {
    for (const data of readRecords(readFileSync(f)).records) {
      try {
        const e = Event.toObject(Event.decode(data), { longs: Number }) as { step?: number; wallTime?: number; summary?: unknown };
        if (e.summary && e.wallTime !== undefined) out.set(e.step ?? 0, e.wallTime);
      } catch {
        // not an Event gsteer can read: nothing to keep from it
      }
    }
  }
  return out;
}

export interface EventWriter {
  file: string;
  append(rec: MetricsRecord): void;
}

/**
 * Rewrite the run's event file from `records` (metrics.jsonl as it is now), then append.
 * Order: the new file is built and fsynced under REBUILD, the old event files are removed,
 * then it is renamed into place, so no moment has two files with the same steps; a crash in
 * between leaves no event file, which the next open rebuilds from metrics.jsonl (and REBUILD).
 * The new name's seconds sort after every old name (TensorBoard follows the newest file).
 */
export function openEventWriter(dir: string, records: readonly MetricsRecord[], now: () => number = Date.now): EventWriter {
  const olds = existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => EVENT_FILE.test(n))
        .sort()
    : [];
  const rebuild = join(dir, REBUILD);
  const walls = wallTimes([...(existsSync(rebuild) ? [rebuild] : []), ...olds.map((n) => join(dir, n))]);
  const fallback = existsSync(join(dir, 'metrics.jsonl')) ? statSync(join(dir, 'metrics.jsonl')).mtimeMs / 1000 : now() / 1000;
  const lastSecs = Math.max(0, ...olds.map((n) => Number(EVENT_FILE.exec(n)![1])));
  const file = join(dir, eventFileName(Math.max(Math.floor(now() / 1000), lastSecs + 1), hostname()));
  const parts = [versionEvent(now() / 1000), ...records.map((r) => scalarEvent(r, walls.get(r.step as number) ?? fallback))];
  writeFileAtomic(rebuild, Buffer.concat(parts));
  for (const n of olds) rmSync(join(dir, n), { force: true });
  renameSync(rebuild, file);
  fsyncDir(dir);
  return {
    file,
    append: (rec) => appendFileSync(file, scalarEvent(rec, now() / 1000), { flush: true }),
  };
}
