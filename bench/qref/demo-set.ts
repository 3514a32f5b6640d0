// What the written QREF demo set (data/qref/demo) measures under the embedded backends (not
// part of `npm test`; the figures in rollout/qref/README.md and data/qref/README.md come from here):
//   1. evidence recall of the agents' original batches against the demonstrations' refined
//      batches, BM25 top k for k = 3, 5, 10, per split, and the QREF reward of the refined
//      batches (rollout/qref/reward.ts, default query cost);
//   2. the rule evidence filter over the refined batches' top-5 results: precision / recall /
//      F1 against the evidence ids for a sweep of minCoverage, with and without the trace in
//      the need (filter-rule.ts leaves the trace out; this is the measurement behind that).
// Run: node --import tsx bench/qref/demo-set.ts
import { QrefSchema } from '../../configs/qref.ts';
import { loadQref } from '../../data/qref/load.ts';
import type { Question } from '../../data/qref/schema.ts';
import { termSet } from '../../rollout/qref/analyzer.ts';
import { Bm25Search } from '../../rollout/qref/bm25.ts';
import { addCounts, filterCounts, filterMetrics, NO_COUNTS } from '../../rollout/qref/evidence-filter.ts';
import { qrefReward } from '../../rollout/qref/reward.ts';

const cfg = QrefSchema.parse({});
const data = loadQref({ corpus: cfg.data.corpus, questions: cfg.data.questions, demonstrations: cfg.data.demonstrations }, cfg.turn);
const index = new Bm25Search(data.corpus, cfg.search.bm25);
const refinedOf = new Map(data.demonstrations.map((d) => [d.questionId, d.refined]));
const splits = ['train', 'test'] as const;
const f3 = (x: number | null) => (x === null ? '  -  ' : x.toFixed(3));
const top = (q: string, k: number) =>
  index
    .rank(q)
    .slice(0, k)
    .map((h) => h.id);

console.log(
  `corpus ${data.corpus.length} documents; questions ${splits.map((s) => `${s} ${data.questions.filter((q) => q.split === s).length}`).join(', ')}; demonstrations ${data.demonstrations.length}`,
);
console.log('\n1. evidence recall, original batch -> refined demonstration (BM25, k1 1.2, b 0.75)');
console.log('split  k   recall orig  recall refined  better/same/worse  mean reward (query cost 0.1)');
for (const split of splits) {
  const qs = data.questions.filter((q) => q.split === split);
  for (const k of [3, 5, 10]) {
    let o = 0,
      r = 0,
      rew = 0;
    const cmp = [0, 0, 0];
    for (const q of qs) {
      const b = qrefReward(
        { evidenceIds: q.evidenceIds, original: q.batch.map((x) => top(x, k)), refined: refinedOf.get(q.id)!.map((x) => top(x, k)) },
        cfg.reward,
      );
      o += b.recall_original;
      r += b.recall_refined;
      rew += b.reward;
      cmp[b.recall_gain > 0 ? 0 : b.recall_gain === 0 ? 1 : 2]!++;
    }
    console.log(
      `${split.padEnd(6)} ${String(k).padStart(2)}   ${(o / qs.length).toFixed(3)}        ${(r / qs.length).toFixed(3)}           ${cmp.join('/').padEnd(17)}  ${(rew / qs.length).toFixed(3)}`,
    );
  }
}

console.log("\n2. rule evidence filter on the refined queries' BM25 top 5 (pooled counts)");
const need = (q: Question, query: string, withTrace: boolean) => termSet(`${q.question}\n${withTrace ? `${q.trace}\n` : ''}${query}`);
const coverage = (n: Set<string>, title: string, text: string) => {
  const doc = termSet(`${title}\n${text}`);
  let shared = 0;
  for (const t of n) if (doc.has(t)) shared++;
  return n.size ? shared / n.size : 0;
};
for (const withTrace of [false, true]) {
  console.log(`need = question + query${withTrace ? ' + trace' : ' (the rule)'}`);
  console.log('minCoverage   ' + splits.map((s) => `${s}: P      R      F1   `).join('  '));
  for (const th of [0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6]) {
    const cells = splits.map((split) => {
      let c = NO_COUNTS;
      for (const q of data.questions.filter((x) => x.split === split)) {
        for (const query of refinedOf.get(q.id)!) {
          const hits = index.rank(query).slice(0, 5);
          const n = need(q, query, withTrace);
          const kept = hits.flatMap((h, k) => (coverage(n, h.title, h.text) >= th ? [k] : []));
          c = addCounts(c, filterCounts(hits, kept, new Set(q.evidenceIds)));
        }
      }
      const m = filterMetrics(c);
      return `${f3(m.filter_precision)}  ${f3(m.filter_recall)}  ${f3(m.filter_f1)}`;
    });
    console.log(`${th.toFixed(2).padEnd(12)}  ${cells.join('     ')}`);
  }
}
