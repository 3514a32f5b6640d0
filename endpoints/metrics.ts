// Per-role summaries of call records over a window (e.g. one GRPO update), as metrics named
// llm/<role>/<name>:
//   calls              attempts sent to the server (retries included, cache hits not)
//   errors             attempts that failed (any status other than ok and cached)
//   retries            attempts that were retries (record.retries > 0)
//   cached             cache hits (no request sent)
//   prompt_tokens, completion_tokens   summed over attempts whose server reported usage
//   latency_p50_ms, latency_p95_ms     over the attempts sent, nearest-rank percentiles
// A role with no attempt sent in the window has no latency metrics (not a made-up 0).
import type { CallRecord, CallSink } from './records.ts';

/**
 * Nearest-rank percentile of ascending `sorted` (n >= 1): the smallest value with at least
 * p% of the values at or below it, i.e. sorted[ceil(p/100 * n) - 1] (index clamped to >= 0).
 */
export function percentileNearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error('internal: percentile of no values');
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

export function summarizeCalls(records: readonly CallRecord[]): Record<string, number> {
  const byRole = new Map<string, CallRecord[]>();
  for (const r of records) byRole.set(r.role, [...(byRole.get(r.role) ?? []), r]);
  const out: Record<string, number> = {};
  for (const [role, rs] of byRole) {
    const sent = rs.filter((r) => r.status !== 'cached');
    const m = (name: string, v: number) => (out[`llm/${role}/${name}`] = v);
    m('calls', sent.length);
    m('errors', sent.filter((r) => r.status !== 'ok').length);
    m('retries', sent.filter((r) => r.retries > 0).length);
    m('cached', rs.length - sent.length);
    m(
      'prompt_tokens',
      sent.reduce((s, r) => s + (r.promptTokens ?? 0), 0),
    );
    m(
      'completion_tokens',
      sent.reduce((s, r) => s + (r.completionTokens ?? 0), 0),
    );
    if (sent.length) {
      const lat = sent.map((r) => r.latencyMs).sort((a, b) => a - b);
      m('latency_p50_ms', percentileNearestRank(lat, 50));
      m('latency_p95_ms', percentileNearestRank(lat, 95));
    }
  }
  return out;
}

/** A sink that keeps the records of the current window; takeWindow() summarizes and starts a new one. */
export class CallAggregator implements CallSink {
  private window: CallRecord[] = [];

  record(r: CallRecord): void {
    this.window.push(r);
  }

  takeWindow(): Record<string, number> {
    const out = summarizeCalls(this.window);
    this.window = [];
    return out;
  }
}
