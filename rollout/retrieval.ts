// Retrieve (method §2/§3): memory search inside one user-state snapshot. Two stages:
// 1. Candidate pre-selection (at most `candidates`, 15), by `preselect`:
//    - embedding (default; the paper's FAISS-based memory index): the memories with the
//      highest encoder cosine to the query, ties newest first. Exact cosine over every memory
//      of the snapshot, i.e. what a flat FAISS inner-product index returns on unit vectors: a
//      user holds tens to hundreds of memories, so an exact scan costs microseconds, needs no
//      native library, and has no approximation error for a test to explain.
//    - lexical (gsteer's earlier reading): memories ranked by how many distinct content
//      words of the query they contain (name + purpose + value, lowercased, stop words
//      dropped), ties broken by recency (newest first); recent memories fill the places
//      lexical overlap leaves.
//    With <= 15 memories every memory is a candidate either way.
// 2. Final scoring: encoder cosine between the query and each candidate's stored embedding;
//    the best `topK` (3) with cosine > 0 are returned, best first (ties: newest first).
import { cosine } from '../core/encoder.ts';
import { words } from '../encoders/hashed.ts';
import { InputError } from '../util/errors.ts';
import { memoryText, type SearchOptions, type SearchResult, type StoredMemory } from './user-store.ts';

// Function words that say nothing about which memory is meant.
const STOP_WORDS = new Set(
  'a an the and or of to in on for with by at from about as is are was were be been do does did my your our their his her its i you we they me what which who how when where why that this these those any some it not no yes'.split(
    ' ',
  ),
);

export function contentWords(text: string): Set<string> {
  return new Set(words(text).filter((w) => !STOP_WORDS.has(w)));
}

/** Stage 1: indices of at most `n` candidates, by lexical overlap then recency. */
export function preselect(memories: readonly StoredMemory[], query: string, n: number): number[] {
  const q = contentWords(query);
  const ranked = memories.map((m, i) => {
    const mw = contentWords(memoryText(m));
    let overlap = 0;
    for (const w of q) if (mw.has(w)) overlap++;
    return { i, overlap, recency: m.addedIn };
  });
  ranked.sort((a, b) => b.overlap - a.overlap || b.recency - a.recency || b.i - a.i);
  return ranked.slice(0, n).map((r) => r.i);
}

export function searchSnapshot(
  memories: readonly StoredMemory[],
  query: string,
  queryVec: Float32Array,
  encoderName: string,
  opts: SearchOptions,
): SearchResult {
  const score = (i: number) => {
    const m = memories[i] as StoredMemory;
    if (m.encoder !== encoderName || m.embedding.length !== queryVec.length)
      throw new InputError(
        `memory "${m.name}" was embedded by ${m.encoder} (dim ${m.embedding.length}) but the run's encoder is ${encoderName} (dim ${queryVec.length}); use the same encoder config or reload the user states`,
      );
    return { i, m, score: cosine(queryVec, m.embedding) };
  };
  const byScore = (a: ReturnType<typeof score>, b: ReturnType<typeof score>) => b.score - a.score || b.m.addedIn - a.m.addedIn || b.i - a.i;
  // embedding: score all, keep the best `candidates`; lexical: pick by words, then score those
  const scored =
    (opts.preselect ?? 'embedding') === 'embedding'
      ? memories
          .map((_, i) => score(i))
          .sort(byScore)
          .slice(0, opts.candidates)
      : preselect(memories, query, opts.candidates).map(score).sort(byScore);
  const hits = scored
    .filter((s) => s.score > 0)
    .slice(0, opts.topK)
    .map(({ m, score }) => ({ name: m.name, purpose: m.purpose, value: m.value, score }));
  return { examined: scored.length, hits };
}
