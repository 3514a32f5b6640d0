// QREF search backends (issue 23): what executes the original and the refined query batches.
// Two implementations behind one interface (one conformance suite for both): `bm25.ts`, an embedded BM25 index
// over a local corpus (the default on a fresh machine), and `http-search.ts`, any JSON search
// API (Serper, Elasticsearch, a Pyserini server) through a configurable request and response
// mapping. A search never throws for what the backend does: a bad reply, a timeout or a
// refused connection is a failed search (`ok: false`) with a reason, so one broken query
// fails one query and never the rollout.

/** One result of one query, as the paper's snippets: an id (URL for web search), title, text, score. */
export interface SearchHit {
  id: string;
  title: string;
  text: string;
  /** Backend score (BM25 for the embedded index; the API's own, or 1/rank when it gives none). */
  score: number;
}

export const SEARCH_FAILURES = ['timeout', 'network', 'too_large', 'http_status', 'not_json', 'bad_shape'] as const;
export type SearchFailure = (typeof SEARCH_FAILURES)[number];

export type SearchOutcome =
  | { ok: true; hits: SearchHit[] }
  /** `transient`: worth retrying later (timeouts, refused connections, 5xx, 429); a bad reply shape is not. */
  | { ok: false; reason: SearchFailure; detail: string; transient: boolean };

export interface SearchBackend {
  /** For logs and metrics: `bm25` or `http:<host>`. */
  readonly name: string;
  /** The top `topK` hits for `query`, best first. Resolves (never rejects) for anything the backend does. */
  search(query: string, topK: number): Promise<SearchOutcome>;
}

/** Every query of a batch, in order (the paper's D^raw_t = {D_t,1, ..., D_t,m}). */
export function searchBatch(backend: SearchBackend, queries: readonly string[], topK: number): Promise<SearchOutcome[]> {
  return Promise.all(queries.map((q) => backend.search(q, topK)));
}

/** The ids a batch retrieved, per query; null for a failed search. */
export function retrievedIds(outcomes: readonly SearchOutcome[]): (string[] | null)[] {
  return outcomes.map((o) => (o.ok ? o.hits.map((h) => h.id) : null));
}
