// Call records for the agent's tools (rollout/agent/README.md): every search and every page read
// is one record in the same sink as the LLM calls (endpoints/records.ts: `{ts, role, endpoint,
// model, status, latencyMs, ...}`), role `search` or `reader`, so a run's llm_calls.jsonl holds
// every call the agent made. The tools are not OpenAI-compatible endpoints (a search API, a
// page reader), so they keep their own clients and failure values (search.ts, reader.ts) and
// only their records go through the endpoints layer's sink. No query, no page text, no key.
import { shortError, type CallRecord, type CallSink } from '../../endpoints/records.ts';
import type { SearchBackend, SearchOutcome } from '../qref/search.ts';
import type { ReadOutcome, Reader } from './types.ts';

const record = (sink: CallSink, role: string, endpoint: string, t0: number, ts: string, ok: boolean, reason: string, detail: string): void =>
  sink.record({
    ts,
    role,
    endpoint,
    model: endpoint,
    status: ok ? 'ok' : reason === 'timeout' ? 'timeout' : reason === 'network' ? 'connection' : 'error',
    latencyMs: Math.round(performance.now() - t0),
    promptTokens: null,
    completionTokens: null,
    retries: 0,
    error: ok ? null : shortError(`${reason}: ${detail}`),
  } satisfies CallRecord);

/** `backend` with one `search` record per query. */
export function recordedSearch(backend: SearchBackend, sink: CallSink): SearchBackend {
  return {
    name: backend.name,
    async search(query: string, topK: number): Promise<SearchOutcome> {
      const [t0, ts] = [performance.now(), new Date().toISOString()];
      const o = await backend.search(query, topK);
      record(sink, 'search', backend.name, t0, ts, o.ok, o.ok ? '' : o.reason, o.ok ? '' : o.detail);
      return o;
    },
  };
}

/** `reader` with one `reader` record per page. */
export function recordedReader(reader: Reader, sink: CallSink): Reader {
  return {
    name: reader.name,
    async read(url: string): Promise<ReadOutcome> {
      const [t0, ts] = [performance.now(), new Date().toISOString()];
      const o = await reader.read(url);
      record(sink, 'reader', reader.name, t0, ts, o.ok, o.ok ? '' : o.reason, o.ok ? '' : o.detail);
      return o;
    },
  };
}
