// The evidence filter F_psi (the QREF paper, method §13): for one refined query, look at its result
// list given the question x and the reasoning trace tau_t, and keep the indices I_t,j of the
// results worth showing the agent (D_t,j = {d_t,j,k : k in I_t,j}). Two implementations
// behind this interface: the embedded lexical rule (filter-rule.ts) and an LLM (filter-llm.ts;
// the paper uses Qwen3-8B) through the endpoints/ layer; an LLM reply that is not a valid
// index set is a failed decision (checkKept), never forwarded.
// Metrics: precision and recall of the kept results against the step's evidence ids,
// pooled over queries (counts are summed, then divided, as method §8 pools its counts).
import type { SearchHit } from './search.ts';

export interface FilterInput {
  question: string;
  trace: string;
  /** The refined query q~_t,j whose results these are. */
  query: string;
  results: readonly SearchHit[];
}

export type FilterDecision = { ok: true; kept: number[] } | { ok: false; reason: 'bad_indices' | 'failed_call'; detail: string };

export interface EvidenceFilter {
  readonly name: string;
  filter(input: FilterInput): Promise<FilterDecision>;
}

/** A kept-index set as a filter may return it: integers in [0, n), each once. Sorted ascending on success. */
export function checkKept(kept: readonly unknown[], n: number): FilterDecision {
  const seen = new Set<number>();
  for (const k of kept) {
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 0 || k >= n)
      return { ok: false, reason: 'bad_indices', detail: `kept index ${JSON.stringify(k)} is not an integer in [0, ${n})` };
    if (seen.has(k)) return { ok: false, reason: 'bad_indices', detail: `kept index ${k} appears twice` };
    seen.add(k);
  }
  return { ok: true, kept: [...seen].sort((a, b) => a - b) };
}

/** Counts behind the filter metrics, for one result list or summed over many. */
export interface FilterCounts {
  retrieved: number; // results shown to the filter
  kept: number;
  evidenceRetrieved: number; // results that are evidence documents
  evidenceKept: number;
}

export const NO_COUNTS: FilterCounts = { retrieved: 0, kept: 0, evidenceRetrieved: 0, evidenceKept: 0 };

export function filterCounts(results: readonly { id: string }[], kept: readonly number[], evidenceIds: ReadonlySet<string>): FilterCounts {
  const keptSet = new Set(kept);
  let evidenceRetrieved = 0;
  let evidenceKept = 0;
  results.forEach((r, k) => {
    if (!evidenceIds.has(r.id)) return;
    evidenceRetrieved++;
    if (keptSet.has(k)) evidenceKept++;
  });
  return { retrieved: results.length, kept: keptSet.size, evidenceRetrieved, evidenceKept };
}

export function addCounts(a: FilterCounts, b: FilterCounts): FilterCounts {
  return {
    retrieved: a.retrieved + b.retrieved,
    kept: a.kept + b.kept,
    evidenceRetrieved: a.evidenceRetrieved + b.evidenceRetrieved,
    evidenceKept: a.evidenceKept + b.evidenceKept,
  };
}

export interface FilterMetrics {
  /** evidence kept / kept; null when nothing was kept. */
  filter_precision: number | null;
  /** evidence kept / evidence retrieved; null when no evidence was retrieved. */
  filter_recall: number | null;
  filter_f1: number | null;
  /** kept / retrieved; null when nothing was retrieved. */
  filter_keep_rate: number | null;
}

export function filterMetrics(c: FilterCounts): FilterMetrics {
  const p = c.kept ? c.evidenceKept / c.kept : null;
  const r = c.evidenceRetrieved ? c.evidenceKept / c.evidenceRetrieved : null;
  const f1 = p === null || r === null ? null : p + r === 0 ? 0 : (2 * p * r) / (p + r);
  return { filter_precision: p, filter_recall: r, filter_f1: f1, filter_keep_rate: c.retrieved ? c.kept / c.retrieved : null };
}
