// One record per HTTP attempt of the Tinker client (RUN_DIR/trainer_calls.jsonl, beside
// llm_calls.jsonl): the endpoints layer's CallRecord (when, status, latency, retries; no key,
// no body) plus the Tinker route, the request's future id, the model, the attempt number and
// the bytes sent and received. Per update, `summarizeTrainerCalls` gives calls, errors,
// retries, latency p50/p95 (nearest rank, as endpoints/metrics.ts) and bytes, as metrics named
// trainer/<name>.
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { percentileNearestRank, type CallRecord } from '../../../endpoints/index.ts';
import { writeJsonlLine } from '../../../util/jsonl.ts';

export interface TrainerCallRecord extends CallRecord {
  /** The Tinker route, e.g. forward_backward, retrieve_future. */
  route: string;
  /** The future the call created or polled (null before the server answered one). */
  requestId: string | null;
  modelId: string | null;
  /** The idempotency key the request carried (deterministic, not a secret). */
  idempotencyKey: string | null;
  /** 1 for the first attempt of a call, k + 1 for its k-th retry. */
  attempt: number;
  bytesSent: number;
  bytesReceived: number;
}

export interface TrainerCallSink {
  record(r: TrainerCallRecord): void;
}

export const nullTrainerSink: TrainerCallSink = { record() {} };

/** Appends one line per attempt (a synchronous O_APPEND write: lines never interleave). */
export class JsonlTrainerCallSink implements TrainerCallSink {
  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }
  record(r: TrainerCallRecord): void {
    appendFileSync(this.file, writeJsonlLine(r));
  }
}

export function summarizeTrainerCalls(records: readonly TrainerCallRecord[]): Record<string, number> {
  const out: Record<string, number> = {
    'trainer/calls': records.length,
    'trainer/errors': records.filter((r) => r.status !== 'ok').length,
    'trainer/retries': records.filter((r) => r.retries > 0).length,
    'trainer/bytes_sent': records.reduce((s, r) => s + r.bytesSent, 0),
    'trainer/bytes_received': records.reduce((s, r) => s + r.bytesReceived, 0),
  };
  if (records.length) {
    const lat = records.map((r) => r.latencyMs).sort((a, b) => a - b);
    out['trainer/latency_p50_ms'] = percentileNearestRank(lat, 50);
    out['trainer/latency_p95_ms'] = percentileNearestRank(lat, 95);
  }
  return out;
}

/** Keeps the records of the current window (one update); takeWindow() summarizes and starts a new one. */
export class TrainerCallAggregator implements TrainerCallSink {
  private window: TrainerCallRecord[] = [];
  record(r: TrainerCallRecord): void {
    this.window.push(r);
  }
  takeWindow(): Record<string, number> {
    const out = summarizeTrainerCalls(this.window);
    this.window = [];
    return out;
  }
}

export function teeTrainerSinks(...sinks: TrainerCallSink[]): TrainerCallSink {
  return { record: (r) => sinks.forEach((s) => s.record(r)) };
}
