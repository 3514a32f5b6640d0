// The LLM steps of the PQR protocol (judge.ts, pqr.ts; PDR-Bench appendix J: the evaluator
// weighs the dimensions for the task and persona, writes task- and persona-specific criteria per
// dimension with explanations and weights summing to 1, and a separate scorer analyzes the report
// against every criterion and gives each an integer 0..10). Each step is one chat call under a
// zod JSON schema through endpoints/ (retry rule, refused replies retried, request cache by
// hash). Steps 1-2 have no seed (one plan per instance and metric); round k of the scorer sends
// `seed: k`, so the three rounds are three requests (and a re-run replays them from the cache).
// After the last retry a step fails (ReplyError): no score is made up.
import { z } from 'zod';
import type { DownstreamConfig } from '../../configs/downstream.ts';
import type { Instance } from '../../data/schema.ts';
import type { Endpoint } from '../../endpoints/index.ts';
import { DIMENSION_TEXT, DIMENSIONS, personaText, type Dimension, type Metric, type MetricPlan, type PqrSteps } from './pqr.ts';

const weightsSchema = (metric: Metric) =>
  z
    .object({
      rationale: z.string(),
      weights: z.object(Object.fromEntries(DIMENSIONS[metric].map((d) => [d, z.number().min(0).max(1)]))).strict(),
    })
    .strict()
    .refine((v) => Object.values(v.weights).reduce((a, b) => a + (b as number), 0) > 0, {
      message: 'the weights sum to 0; give every dimension its share of 1',
    });

const criteriaSchema = z
  .object({
    criteria: z
      .array(z.object({ criterion: z.string().min(1), explanation: z.string(), weight: z.number().min(0).max(1) }).strict())
      .min(1)
      .max(10),
  })
  .strict()
  .refine((v) => v.criteria.reduce((a, c) => a + c.weight, 0) > 0, { message: 'the criterion weights sum to 0; give each criterion its share of 1' });

const scoresSchema = (ids: readonly string[]) =>
  z
    .object({ scores: z.array(z.object({ id: z.enum(ids as [string, ...string[]]), analysis: z.string(), score: z.number().int().min(0).max(10) }).strict()) })
    .strict()
    .refine((v) => new Set(v.scores.map((s) => s.id)).size === v.scores.length && v.scores.length === ids.length, {
      message: `score every criterion exactly once: ${ids.join(', ')}`,
    });

const dimList = (metric: Metric) => DIMENSIONS[metric].map((d) => `- ${d} (${DIMENSION_TEXT[d].name}): ${DIMENSION_TEXT[d].definition}`).join('\n');
const about = (metric: Metric) =>
  metric === 'p' ? 'personalization alignment: how well a report fits this particular user' : 'content quality, regardless of who asked';

export const PQR_PROMPTS = {
  weights: (metric: Metric) =>
    `You design the evaluation of deep-research reports (PDR-Bench PQR, ${about(metric)}). Weigh these dimensions for this task${metric === 'p' ? ' and this user' : ''}:\n${dimList(metric)}\n` +
    `Give each a weight between 0 and 1, the weights summing to 1.0, and a rationale explaining how the task${metric === 'p' ? ' and the persona' : ''} justify the allocation. ` +
    `Reply with one JSON object {"rationale": text, "weights": {${DIMENSIONS[metric].map((d) => `"${d}": n`).join(', ')}}} and nothing else.`,
  criteria: (metric: Metric, d: Dimension) =>
    `You design the evaluation of deep-research reports (PDR-Bench PQR, ${about(metric)}). Write the criteria for one dimension, ${DIMENSION_TEXT[d].name}: ${DIMENSION_TEXT[d].definition}.\n` +
    `The criteria must be specific to this task${metric === 'p' ? ' and this user (their explicit and implicit needs, their distinctive preferences)' : ''}, must not overlap with the other dimensions (${DIMENSIONS[
      metric
    ]
      .filter((x) => x !== d)
      .map((x) => DIMENSION_TEXT[x].name)
      .join(', ')}), and each needs an explanation and a weight; the weights sum to 1.0, higher for what matters more here.\n` +
    'Reply with one JSON object {"criteria": [{"criterion": text, "explanation": text, "weight": n}, ...]} (1 to 10 criteria) and nothing else.',
  scorer: (metric: Metric) =>
    `You score a deep-research report (PDR-Bench PQR, ${about(metric)}) against given criteria. For every criterion, analyze the report's strengths and weaknesses on it, then give an integer score from 0 (not met at all) to 10 (fully met).\n` +
    'Reply with one JSON object {"scores": [{"id": criterion id, "analysis": text, "score": integer 0..10}, ...]} covering every criterion once, and nothing else.',
};

export class LlmPqrSteps implements PqrSteps {
  readonly standIn = false;
  readonly model: string;

  constructor(
    private readonly c: DownstreamConfig['judge'],
    private readonly ep: Endpoint,
  ) {
    this.model = c.model;
  }

  private sampling(seed?: number) {
    return {
      ...(seed !== undefined ? { seed } : {}),
      ...(this.c.temperature !== null ? { temperature: this.c.temperature } : {}),
      ...(this.c.maxTokens !== null ? { maxTokens: this.c.maxTokens } : {}),
    };
  }

  /** The task (and, for P, the persona) every P / Q step reads. */
  private context(instance: Instance, metric: Metric): string {
    return `${metric === 'p' ? `USER PERSONA:\n${personaText(instance)}\n\n` : ''}RESEARCH TASK:\n${instance.query}`;
  }

  async weights(instance: Instance, metric: Metric): Promise<Record<string, number>> {
    const r = await this.ep.chatJson(
      {
        messages: [
          { role: 'system', content: PQR_PROMPTS.weights(metric) },
          { role: 'user', content: this.context(instance, metric) },
        ],
        ...this.sampling(),
      },
      { name: `pqr_${metric}_weights`, schema: weightsSchema(metric) },
    );
    return r.value.weights as Record<string, number>;
  }

  async criteria(instance: Instance, metric: Metric, dimension: Dimension): Promise<{ text: string; weight: number }[]> {
    const r = await this.ep.chatJson(
      {
        messages: [
          { role: 'system', content: PQR_PROMPTS.criteria(metric, dimension) },
          { role: 'user', content: this.context(instance, metric) },
        ],
        ...this.sampling(),
      },
      { name: `pqr_${metric}_criteria`, schema: criteriaSchema },
    );
    return r.value.criteria.map((c) => ({ text: c.explanation ? `${c.criterion} (${c.explanation})` : c.criterion, weight: c.weight }));
  }

  async score(instance: Instance, report: string, plan: MetricPlan, round: number): Promise<Map<string, number>> {
    const all = DIMENSIONS[plan.metric].flatMap((d) => plan.criteria[d] ?? []);
    const list = all.map((c) => `- ${c.id}: ${c.text}`).join('\n');
    const user = `${this.context(instance, plan.metric)}\n\nCRITERIA:\n${list}\n\nREPORT:\n${report}`;
    const r = await this.ep.chatJson(
      {
        messages: [
          { role: 'system', content: PQR_PROMPTS.scorer(plan.metric) },
          { role: 'user', content: user },
        ],
        ...this.sampling(round),
      },
      { name: `pqr_${plan.metric}_scores`, schema: scoresSchema(all.map((c) => c.id)) },
    );
    return new Map(r.value.scores.map((s) => [s.id, s.score]));
  }
}
