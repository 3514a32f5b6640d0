// Metrics sink: one JSON line per update in RUN/metrics.jsonl (fsynced: the checkpoint
// records how many lines belong to it) and the same record on a Redis stream (XADD with an
// approximate MAXLEN) for live dashboards.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export type MetricsRecord = Record<string, number | string>;

export interface MetricsSink {
  write(rec: MetricsRecord): Promise<void>;
  lines(): number;
}

export const STREAM_MAXLEN = 10_000;

export function countLines(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).length;
}

/** Keep the first n lines (resume: drop the records of updates after the checkpoint). */
export function truncateLines(file: string, n: number): void {
  if (!existsSync(file)) return;
  const kept = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).slice(0, n);
  writeFileSync(file, kept.map((l) => `${l}\n`).join(''));
}

export function readMetrics(file: string): MetricsRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as MetricsRecord);
}

export function metricsSink(file: string, redis: Redis | null, streamKey: string): MetricsSink {
  let n = countLines(file);
  return {
    async write(rec) {
      appendFileSync(file, `${JSON.stringify(rec)}\n`, { flush: true });
      n++;
      // The stream is best effort: the file is the record of truth.
      if (redis) await redis.xadd(streamKey, 'MAXLEN', '~', String(STREAM_MAXLEN), '*', 'json', JSON.stringify(rec)).catch(() => undefined);
    },
    lines: () => n,
  };
}
