// A run's per-update records as the dashboard keeps them: one per update, in step order.
// Pure. Two sources feed them (metrics.jsonl and the Redis stream); both go through
// `mergeRecord`, so a record seen twice counts once, and a resumed run (metrics.jsonl cut
// back to its checkpoint, the updates after it run again) keeps one point per update.
import type { MetricsRecord } from '../sink.ts';

const same = (a: MetricsRecord, b: MetricsRecord) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Add the record of update `rec.step`. An update after the last one is appended; one at or
 * before it means the run resumed from a checkpoint before it: it replaces that update and
 * drops the later ones (they are being run again). Returns null when nothing changed.
 */
export function mergeRecord(records: readonly MetricsRecord[], rec: MetricsRecord): MetricsRecord[] | null {
  const step = Number(rec.step);
  const last = records.at(-1);
  if (!last || Number(last.step) < step) return [...records, rec];
  const at = records.findIndex((r) => Number(r.step) >= step);
  const existing = records[at] as MetricsRecord;
  // The same record again (the file and the stream both delivered it): nothing changes.
  if (Number(existing.step) === step && same(existing, rec)) return null;
  return [...records.slice(0, at), rec];
}

/** True when `prefix` is the start of `all` record for record (the file only grew). */
export function isPrefix(prefix: readonly MetricsRecord[], all: readonly MetricsRecord[]): boolean {
  return prefix.length <= all.length && prefix.every((r, i) => same(r, all[i] as MetricsRecord));
}

export interface ParsedMetrics {
  records: MetricsRecord[];
  /** `file:line: why` for lines that are not a record (skipped, reported once). */
  problems: string[];
}

/**
 * metrics.jsonl text -> records. A last line without its newline is a write in progress and
 * waits for the next read; a line that is not a JSON object with a numeric `step` is skipped
 * and reported.
 */
export function parseMetricsText(text: string, file: string): ParsedMetrics {
  const lines = text.split('\n');
  if (!text.endsWith('\n')) lines.pop();
  const records: MetricsRecord[] = [];
  const problems: string[] = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const rec = JSON.parse(line) as unknown;
      if (rec && typeof rec === 'object' && !Array.isArray(rec) && typeof (rec as MetricsRecord).step === 'number') records.push(rec as MetricsRecord);
      else problems.push(`${file}:${i + 1}: not a metrics record (a JSON object with a numeric "step"); skipped`);
    } catch (e) {
      problems.push(`${file}:${i + 1}: not valid JSON (${(e as Error).message}); skipped`);
    }
  });
  return { records, problems };
}

/** Numeric keys of a set of records, sorted (what the charts are planned from). */
export function numericKeys(records: readonly MetricsRecord[]): string[] {
  const keys = new Set<string>();
  for (const r of records) for (const [k, v] of Object.entries(r)) if (typeof v === 'number') keys.add(k);
  return [...keys].sort();
}
