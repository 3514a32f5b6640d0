// Metrics sink: one JSON line per update in RUN/metrics.jsonl (fsynced: the checkpoint
// records how many lines belong to it), the same record as a TensorBoard event beside it
// (monitor/tensorboard.ts: rewritten from metrics.jsonl when the sink opens, so after a
// resume it holds the kept lines, then appended and fsynced like them), and on a Redis
// stream (XADD with an approximate MAXLEN) for live dashboards. A line a crash or a full disk
// cut short (the file's last line, not ending in a newline, or one that is not JSON) is
// skipped by every reader with a note naming it, and cut off when the sink opens the file
// again, so the next record starts on a line of its own.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic.ts';
import { dirname } from 'node:path';
import type { RedisClient } from '../util/redis.ts';
import { countLines } from '../util/jsonl.ts';
import { openEventWriter } from './tensorboard.ts';

export type { MetricsRecord } from './record.ts';
import type { MetricsRecord } from './record.ts';

export interface MetricsSink {
  write(rec: MetricsRecord): Promise<void>;
  lines(): number;
}

export const STREAM_MAXLEN = 10_000;

/** `warn` hears about each line skipped (default: stderr). */
export function readMetrics(file: string, warn: (msg: string) => void = (m) => console.error(`gsteer: ${m}`)): MetricsRecord[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const out: MetricsRecord[] = [];
  lines.forEach((l, i) => {
    if (!l.trim()) return;
    const last = i === lines.length - 1; // no newline after it: a write cut short
    try {
      const rec = JSON.parse(l) as MetricsRecord;
      if (rec && typeof rec === 'object' && typeof rec.step === 'number') return void out.push(rec);
    } catch {
      // below
    }
    warn(`${file}:${i + 1}: ${last ? 'the last line is torn (a write cut short by a crash or a full disk)' : 'not a metrics record'}; skipped`);
  });
  return out;
}

/** Cut a torn last line (no newline after it) off the file; returns whether there was one. */
function cutTornTail(file: string): boolean {
  if (!existsSync(file)) return false;
  const text = readFileSync(file, 'utf8');
  if (!text || text.endsWith('\n')) return false;
  writeFileAtomic(file, text.slice(0, text.lastIndexOf('\n') + 1));
  return true;
}

export function metricsSink(file: string, redis: RedisClient | null, streamKey: string): MetricsSink {
  if (cutTornTail(file)) console.error(`gsteer: ${file}: cut a torn last line (a write cut short); the next record starts a line of its own`);
  let n = countLines(file);
  const events = openEventWriter(dirname(file), readMetrics(file));
  return {
    async write(rec) {
      const line = JSON.stringify(rec);
      appendFileSync(file, `${line}\n`, { flush: true });
      n++;
      // The event holds what the line holds (JSON drops what it cannot write, e.g. NaN -> null).
      events.append(JSON.parse(line) as MetricsRecord);
      // The stream is best effort: the file is the record of truth.
      if (redis) await redis.xadd(streamKey, 'MAXLEN', '~', String(STREAM_MAXLEN), '*', 'json', line).catch(() => undefined);
    },
    lines: () => n,
  };
}
