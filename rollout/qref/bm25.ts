// The embedded search backend: BM25 over a local corpus, indexed by MiniSearch (npm
// `minisearch`, maintained, no dependencies). Chosen over wink-bm25-text-search (rounds every
// term score to 4 decimals and pulls in wink-nlp and a language model), lunr (BM25-like, no
// release since 2020) and flexsearch (its own contextual scoring, not BM25). MiniSearch
// scores with BM25+ (Lv & Zhai 2011); with delta = 0 that is plain BM25. What it computes,
// for a query with terms t (repeats counted) and a document D:
//
//   BM25(D, Q) = sum_t idf(t) * (delta + tf(t,D) * (k1 + 1) / (tf(t,D) + k1 * (1 - b + b * |D| / avgdl)))
//   idf(t)     = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))      (Lucene's IDF, never negative)
//
// with N documents, n(t) documents containing t, tf(t,D) the count of t in D, and two
// MiniSearch specifics, checked against hand-worked numbers in tests/rollout/qref/bm25.test.ts:
//   - |D| is the number of DISTINCT terms of the document's field (avgdl their mean), not
//     the token count of textbook BM25;
//   - MiniSearch multiplies each document's sum by the number of distinct query terms it
//     matched (a coordination factor, like Lucene's classic `coord`). We divide that factor
//     out and rank by the plain sum above (ties: corpus order), so the backend is BM25.
// One field is indexed, `title + "\n" + text` (Pyserini's "contents"), through
// `analyzer.ts` (Lucene's English analysis: stop words, Porter stems).
import MiniSearch from 'minisearch';
import type { CorpusDoc } from '../../data/qref/schema.ts';
import { analyze } from './analyzer.ts';
import type { SearchBackend, SearchHit, SearchOutcome } from './search.ts';

export interface Bm25Params {
  /** Term-frequency saturation; 1.2 as Lucene/Elasticsearch. */
  k1: number;
  /** Length normalisation; 0.75 as Lucene/Elasticsearch (Robertson's textbook value). */
  b: number;
  /** BM25+ lower bound for a matching term; 0 = plain BM25. */
  delta: number;
}

export const BM25_DEFAULTS: Bm25Params = { k1: 1.2, b: 0.75, delta: 0 };

interface Indexed {
  id: string;
  contents: string;
}

export class Bm25Search implements SearchBackend {
  readonly name = 'bm25';
  private readonly index: MiniSearch<Indexed>;
  private readonly docs = new Map<string, { doc: CorpusDoc; order: number }>();

  constructor(
    corpus: readonly CorpusDoc[],
    readonly params: Bm25Params = BM25_DEFAULTS,
  ) {
    this.index = new MiniSearch<Indexed>({
      fields: ['contents'],
      tokenize: analyze,
      processTerm: (term) => term, // analyze() already gave final terms
      searchOptions: { bm25: { k: params.k1, b: params.b, d: params.delta }, combineWith: 'OR', prefix: false, fuzzy: false },
    });
    corpus.forEach((doc, order) => {
      if (this.docs.has(doc.id)) throw new Error(`internal: duplicate corpus id ${doc.id} (the corpus loader rejects these)`);
      this.docs.set(doc.id, { doc, order });
    });
    this.index.addAll(corpus.map((d) => ({ id: d.id, contents: `${d.title}\n${d.text}` })));
  }

  get size(): number {
    return this.docs.size;
  }

  /** Every matching document, best first ([matches]); the query's terms from analyze(). */
  rank(query: string): SearchHit[] {
    const scored = this.index.search(query).map((r) => {
      const entry = this.docs.get(String(r.id));
      if (!entry) throw new Error(`internal: MiniSearch returned unknown id ${String(r.id)}`);
      // r.score = BM25 sum * (distinct query terms matched); see the header.
      return { entry, score: r.score / Math.max(1, r.queryTerms.length) };
    });
    scored.sort((a, b) => b.score - a.score || a.entry.order - b.entry.order);
    return scored.map(({ entry: { doc }, score }) => ({ id: doc.id, title: doc.title, text: doc.text, score }));
  }

  async search(query: string, topK: number): Promise<SearchOutcome> {
    return { ok: true, hits: this.rank(query).slice(0, topK) };
  }
}
