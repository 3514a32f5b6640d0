// Call records of a run (method §14.6): every LLM call attempt any process of the run makes
// (rollout workers: policy and simulator; the group worker: judge and an http encoder) is
// one line of RUN_DIR/llm_calls.jsonl (endpoints/ CallRecord: role, endpoint, model, status,
// latency, tokens, retries; never a key, a prompt or a reply), tagged with the group whose
// job made the call (endpoints/call-group.ts: withCallGroup / runCallSink, carried by
// AsyncLocalStorage, so concurrent jobs sharing one endpoint are told apart). The controller
// summarizes the records of an update's groups into its metrics (llm/<role>/calls, errors,
// retries, latency_p50_ms, latency_p95_ms ...), whichever process wrote them.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { summarizeCalls, type RunCallRecord } from '../endpoints/index.ts';

/**
 * Reads llm_calls.jsonl as it grows (from the last byte read; a line still being written is
 * left for the next read) and hands out the records of the groups asked for.
 */
export class RunCallReader {
  private offset = 0;
  private rest = '';
  private readonly byGroup = new Map<string, RunCallRecord[]>();

  constructor(private readonly file: string) {}

  private readNew(): void {
    if (!existsSync(this.file)) return;
    const size = statSync(this.file).size;
    if (size <= this.offset) return;
    const buf = Buffer.alloc(size - this.offset);
    const fd = openSync(this.file, 'r');
    try {
      readSync(fd, buf, 0, buf.length, this.offset);
    } finally {
      closeSync(fd);
    }
    this.offset = size;
    const lines = (this.rest + buf.toString('utf8')).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      let r: RunCallRecord;
      try {
        r = JSON.parse(line) as RunCallRecord;
      } catch {
        continue; // a torn line of a killed process: metrics only, the run goes on
      }
      if (r.groupId === undefined) continue;
      const list = this.byGroup.get(r.groupId) ?? [];
      list.push(r);
      this.byGroup.set(r.groupId, list);
    }
  }

  /** llm/<role>/... metrics over the calls of these groups (consumed: a group is counted once). */
  take(groupIds: readonly string[]): Record<string, number> {
    this.readNew();
    const records = groupIds.flatMap((g) => this.byGroup.get(g) ?? []);
    for (const g of groupIds) this.byGroup.delete(g);
    return summarizeCalls(records);
  }
}
