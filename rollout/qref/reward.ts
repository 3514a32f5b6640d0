// The retrieval-grounded reward of a refiner turn (the QREF paper, method §13: "the retrieval
// outcomes of Q~ are compared against those of the original queries ... encouraging the model
// to produce refined queries that recover more of the required evidence than the agent's own
// queries"; GPT-5.2's gains "largely driven by generating substantially more queries" are why
// extra queries cost). The paper gives no formula; this is ours, stated exactly:
//
//   E          the step's required evidence ids (Question.evidenceIds), |E| >= 1
//   R_k(q)     the ids of the top-k results of query q (a failed search retrieves nothing)
//   U(B)       = union over q in B of R_k(q)                 what a batch retrieved
//   recall(B)  = |U(B) ∩ E| / |E|
//   gain       = recall(Q~) - recall(Q)                        in [-1, 1]
//   extra      = max(0, |Q~| - |Q|)                            queries beyond the agent's own
//   R          = gain - queryCost * extra
//   an invalid turn (unparseable; nothing is searched): R = -invalidPenalty
//
// So a refiner that copies the batch earns 0; one that finds one more of two evidence
// documents with one extra query earns 0.5 - queryCost. Every quantity is reported, not only R.

export interface QrefRewardParams {
  queryCost: number;
  invalidPenalty: number;
}

export interface QrefRewardInput {
  evidenceIds: readonly string[];
  /** [m] per original query: its top-k ids, or null for a failed search. */
  original: readonly (readonly string[] | null)[];
  /** [m~] per refined query, as `original`; null when the turn was invalid. */
  refined: readonly (readonly string[] | null)[] | null;
}

export interface QrefRewardBreakdown {
  reward: number;
  recall_refined: number;
  recall_original: number;
  recall_gain: number;
  queries_refined: number;
  queries_original: number;
  extra_queries: number;
  query_cost: number;
  /** 1 for an invalid turn, else 0. */
  invalid: number;
  invalid_penalty: number;
  evidence_found_refined: number;
  evidence_found_original: number;
  /** |U(B)|: distinct documents the batch retrieved. */
  retrieved_refined: number;
  retrieved_original: number;
  /** |U(B) ∩ E| / |U(B)| (0 when nothing was retrieved): reported, not rewarded. */
  precision_refined: number;
  precision_original: number;
  failed_searches_refined: number;
  failed_searches_original: number;
}

interface BatchOutcome {
  found: number;
  recall: number;
  retrieved: number;
  precision: number;
  failed: number;
}

function batchOutcome(lists: readonly (readonly string[] | null)[], evidence: ReadonlySet<string>): BatchOutcome {
  const union = new Set<string>();
  let failed = 0;
  for (const l of lists) {
    if (l === null) failed++;
    else for (const id of l) union.add(id);
  }
  let found = 0;
  for (const id of union) if (evidence.has(id)) found++;
  return { found, recall: found / evidence.size, retrieved: union.size, precision: union.size ? found / union.size : 0, failed };
}

export function qrefReward(input: QrefRewardInput, p: QrefRewardParams): QrefRewardBreakdown {
  const evidence = new Set(input.evidenceIds);
  if (evidence.size === 0) throw new Error('internal: a question without evidence ids (the loader rejects these)');
  const orig = batchOutcome(input.original, evidence);
  const base = {
    queries_original: input.original.length,
    recall_original: orig.recall,
    evidence_found_original: orig.found,
    retrieved_original: orig.retrieved,
    precision_original: orig.precision,
    failed_searches_original: orig.failed,
  };
  if (input.refined === null) {
    return {
      ...base,
      reward: -p.invalidPenalty,
      recall_refined: 0,
      recall_gain: 0,
      queries_refined: 0,
      extra_queries: 0,
      query_cost: 0,
      invalid: 1,
      invalid_penalty: p.invalidPenalty,
      evidence_found_refined: 0,
      retrieved_refined: 0,
      precision_refined: 0,
      failed_searches_refined: 0,
    };
  }
  const ref = batchOutcome(input.refined, evidence);
  const gain = ref.recall - orig.recall;
  const extra = Math.max(0, input.refined.length - input.original.length);
  const cost = p.queryCost * extra;
  return {
    ...base,
    reward: gain - cost,
    recall_refined: ref.recall,
    recall_gain: gain,
    queries_refined: input.refined.length,
    extra_queries: extra,
    query_cost: cost,
    invalid: 0,
    invalid_penalty: 0,
    evidence_found_refined: ref.found,
    retrieved_refined: ref.retrieved,
    precision_refined: ref.precision,
    failed_searches_refined: ref.failed,
  };
}
