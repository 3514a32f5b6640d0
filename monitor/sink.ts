// Metrics sink: one JSON line per update in RUN/metrics.jsonl (fsynced: the checkpoint
// records how many lines belong to it), the same record as a TensorBoard event beside it
// (monitor/tensorboard.ts: rewritten from metrics.jsonl when the sink opens, so after a
// resume it holds the kept lines, then appended and fsynced like them), and on a Redis
// stream (XADD with an approximate MAXLEN) for live dashboards.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
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

export function readMetrics(file: string): MetricsRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as MetricsRecord);
}

export function metricsSink(file: string, redis: RedisClient | null, streamKey: string): MetricsSink {
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
