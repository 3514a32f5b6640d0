// PDR-Bench's PQR scoring protocol (Liang et al., "Towards Personalized Deep Research", §4.1-4.2
// and appendix J; method §12), the part every judge shares: what is scored and how the scores
// are combined.
//   P (personalization alignment): Goal Alignment, Content Alignment, Presentation Fit,
//     Actionability & Practicality; Q (content quality): Depth & Insight, Logical Coherence,
//     Clarity & Readability.
//   1. dimension weights, generated per task (and persona, for P), summing to 1;
//   2. criteria, generated per task and dimension (and persona, for P), each with a weight, the
//      weights of a dimension summing to 1;
//   3. a separate scorer gives every criterion a score 0..10 for one report;
//   4. hierarchical averaging: a dimension's score is the weighted mean of its criteria's scores,
//      the metric's the weighted mean of its dimensions' scores:
//        dim_d  = sum_c v_c s_c / sum_c v_c          (c in d)
//        metric = sum_d w_d dim_d / sum_d w_d
//   5. three independent scoring rounds per report and metric, averaged (downstream-scores.ts).
// Weights as a model writes them need not sum to exactly 1: they are divided by their sum
// (a set of weights summing to 0 is refused upstream).

import { personaLines } from '../../data/persona.ts';
import type { Instance } from '../../data/schema.ts';

export const P_DIMENSIONS = ['goal', 'content', 'presentation', 'actionability'] as const;
export const Q_DIMENSIONS = ['depth', 'logic', 'clarity'] as const;
export type Metric = 'p' | 'q';
export type Dimension = (typeof P_DIMENSIONS)[number] | (typeof Q_DIMENSIONS)[number];

export const DIMENSIONS: Record<Metric, readonly Dimension[]> = { p: P_DIMENSIONS, q: Q_DIMENSIONS };

/** PDR-Bench's names and definitions (its Tables 6 and 7, in our words). */
export const DIMENSION_TEXT: Record<Dimension, { name: string; definition: string }> = {
  goal: { name: 'Goal Alignment', definition: "how well the report serves the user's explicit and implicit goals behind the task" },
  content: {
    name: 'Content Alignment',
    definition: "whether the content chosen, and its depth, fits the user's situation, constraints, background and interests",
  },
  presentation: { name: 'Presentation Fit', definition: 'whether the structure, level of detail, terminology and style suit this user' },
  actionability: { name: 'Actionability & Practicality', definition: 'how directly the user can act on the report given their circumstances and means' },
  depth: { name: 'Depth & Insight', definition: 'analytical depth, rigor, originality and value beyond listing information' },
  logic: { name: 'Logical Coherence', definition: 'soundness of the reasoning and of the structure, from evidence to conclusions' },
  clarity: { name: 'Clarity & Readability', definition: 'clear, precise, well-organized and readable writing' },
};

export interface Criterion {
  /** `<dimension>.<k>`, k from 1: how the scorer's reply names it. */
  id: string;
  text: string;
  weight: number;
}

/** What a judge scores one metric of one instance's reports against (generated once, shared by every report). */
export interface MetricPlan {
  metric: Metric;
  weights: Record<string, number>; // dimension -> weight
  criteria: Record<string, Criterion[]>; // dimension -> its criteria
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** Hierarchical averaging (step 4): per dimension and the metric's overall, from criterion id -> score. */
export function aggregate(plan: MetricPlan, scores: ReadonlyMap<string, number>): Record<string, number> & { overall: number } {
  const dims = DIMENSIONS[plan.metric];
  const out: Record<string, number> = {};
  for (const d of dims) {
    const cs = plan.criteria[d] ?? [];
    const v = sum(cs.map((c) => c.weight));
    out[d] = v > 0 ? sum(cs.map((c) => c.weight * (scores.get(c.id) ?? 0))) / v : 0;
  }
  const w = sum(dims.map((d) => plan.weights[d] ?? 0));
  const overall = w > 0 ? sum(dims.map((d) => (plan.weights[d] ?? 0) * (out[d] as number))) / w : 0;
  return { ...out, overall };
}

/** Criteria with ids `<dimension>.1 ...` from texts and raw weights (in their order). */
export function numbered(dimension: Dimension, items: readonly { text: string; weight: number }[]): Criterion[] {
  return items.map((c, i) => ({ id: `${dimension}.${i + 1}`, text: c.text, weight: c.weight }));
}

/** The protocol's steps: what an LLM judge asks and what the stand-in computes. */
export interface PqrSteps {
  readonly model: string | null;
  readonly standIn: boolean;
  /** Step 1: dimension -> weight (any non-negative numbers, not all 0). */
  weights(instance: Instance, metric: Metric): Promise<Record<string, number>>;
  /** Step 2: the criteria of one dimension with their weights. */
  criteria(instance: Instance, metric: Metric, dimension: Dimension): Promise<{ text: string; weight: number }[]>;
  /** Step 3: criterion id -> score 0..10 of one report in round `round`. */
  score(instance: Instance, report: string, plan: MetricPlan, round: number): Promise<Map<string, number>>;
}

/** The persona text the P steps read: the static profile and the persona facts. */
export function personaText(i: Instance): string {
  const lines = [i.profile.trim(), ...personaLines(i.persona)].filter(Boolean);
  return lines.length ? lines.join('\n') : '(no persona given)';
}
