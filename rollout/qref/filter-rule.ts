// The embedded evidence filter: a documented lexical rule, deterministic, no model.
//   need  = the distinct terms of the question x and the refined query q~ (analyzer.ts:
//           Lucene English analysis, stop words out, Porter stems)
//   cov_k = |need ∩ terms(title_k + text_k)| / |need|        (share of the need the result covers)
//   keep k  iff  cov_k >= minCoverage      (nothing is kept when the need has no terms)
// The reasoning trace is not in `need`: the trace restates what the agent already found, so
// with it the rule keeps the documents of earlier hops. Measured on the demo set (refined
// demonstration queries, BM25 top 5; rollout/qref/README.md): best F1 on the train split at
// minCoverage 0.45 (P 0.600, R 0.750, F1 0.667; with the trace in `need` the best was F1 0.622
// at 0.30), and on the test split P 0.588, R 0.811, F1 0.682 (bench/qref/demo-set.ts).
// An LLM filter reads the trace.
import { termSet } from './analyzer.ts';
import type { EvidenceFilter, FilterDecision, FilterInput } from './evidence-filter.ts';

/** cov_k of each result ([n] numbers in [0, 1]); null when the need has no terms (then nothing is kept). */
export function needCoverage(input: FilterInput): number[] | null {
  const need = termSet(`${input.question}\n${input.query}`);
  if (need.size === 0) return null;
  return input.results.map((r) => {
    const doc = termSet(`${r.title}\n${r.text}`);
    let shared = 0;
    for (const t of need) if (doc.has(t)) shared++;
    return shared / need.size;
  });
}

export class RuleEvidenceFilter implements EvidenceFilter {
  readonly name = 'rule';
  constructor(readonly minCoverage: number) {
    if (!(minCoverage >= 0 && minCoverage <= 1)) throw new Error(`internal: minCoverage ${minCoverage} outside [0, 1] (configs/qref.ts checks it)`);
  }

  async filter(input: FilterInput): Promise<FilterDecision> {
    const kept: number[] = [];
    (needCoverage(input) ?? []).forEach((c, k) => {
      if (c >= this.minCoverage) kept.push(k);
    });
    return { ok: true, kept };
  }
}
