// Shared by the endpoint tests: endpoint options pointing at a fake vLLM server, and deps
// that record retry waits instead of sleeping (no test waits out a backoff).
import type { EndpointDeps } from '../../endpoints/endpoint.ts';
import type { CallRecord } from '../../endpoints/records.ts';
import type { EndpointOptions } from '../../endpoints/types.ts';

export function options(baseUrl: string, over: Partial<EndpointOptions> = {}): EndpointOptions {
  return { role: 'simulator', baseUrl, model: 'Qwen/Qwen3-32B', timeoutMs: 60_000, maxRetries: 2, concurrency: 4, ...over };
}

export function recordingDeps(now?: () => number): EndpointDeps & { sleeps: number[]; records: CallRecord[] } {
  const sleeps: number[] = [];
  const records: CallRecord[] = [];
  return {
    sleeps,
    records,
    sleep: async (ms) => void sleeps.push(ms),
    sink: { record: (r) => void records.push(r) },
    ...(now ? { now } : {}),
  };
}

export const statuses = (records: readonly CallRecord[]) => records.map((r) => r.status);
