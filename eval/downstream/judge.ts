// The report judge of downstream evaluation (method §12; paper: the PDR-Bench evaluator, GPT-5.4,
// three independent scoring rounds per report and metric, averaged). It follows PDR-Bench's PQR
// protocol (pqr.ts): per instance and metric, dimension weights and per-dimension criteria are
// generated once (P's from the task and the user's persona, Q's from the task alone) and shared
// by every method's report; each round a separate scorer scores every criterion 0..10 and the
// hierarchical average gives the dimension scores and the metric's overall. Factual
// reliability (R) is not scored: the paper omits it (it reflects the fixed DRA's citation
// behaviour, not the query). Two implementations of the protocol's steps (PqrSteps):
//   - `llm` (judge-llm.ts): each step one chat call under a JSON schema, request-cached by hash;
//   - `embedded` (judge-standin.ts): a deterministic STAND-IN with the same steps, its criteria
//     made from the instance's elicitation targets; not paper numbers, and every output says so.
import { endpointOptions } from '../../configs/endpoints.ts';
import type { DownstreamConfig } from '../../configs/downstream.ts';
import type { Instance } from '../../data/schema.ts';
import { createEndpoint, withRequestCache, type CallSink } from '../../endpoints/index.ts';
import type { DownstreamScores } from '../downstream-scores.ts';
import { LlmPqrSteps } from './judge-llm.ts';
import { StandInPqrSteps } from './judge-standin.ts';
import { aggregate, DIMENSIONS, numbered, type Metric, type MetricPlan, type PqrSteps } from './pqr.ts';

export { personaText } from './pqr.ts';

export type JudgeRound = DownstreamScores['scores'][number]['rounds'][number];

export interface ReportJudge {
  readonly model: string | null;
  readonly standIn: boolean;
  /** Round `round` (0-based) of the scores of `report`, written for `instance`'s user and query. */
  score(instance: Instance, report: string, round: number): Promise<JudgeRound>;
}

export class PqrJudge implements ReportJudge {
  private readonly plans = new Map<string, Promise<MetricPlan>>();
  readonly model: string | null;
  readonly standIn: boolean;

  constructor(private readonly steps: PqrSteps) {
    this.model = steps.model;
    this.standIn = steps.standIn;
  }

  /** Steps 1-2, once per instance and metric (every report of the instance is judged against the same plan). */
  plan(instance: Instance, metric: Metric): Promise<MetricPlan> {
    const key = `${instance.id}\u0000${metric}`;
    let p = this.plans.get(key);
    if (!p) {
      p = (async () => {
        const weights = await this.steps.weights(instance, metric);
        const criteria: MetricPlan['criteria'] = {};
        for (const d of DIMENSIONS[metric]) criteria[d] = numbered(d, await this.steps.criteria(instance, metric, d));
        return { metric, weights, criteria };
      })();
      p.catch(() => this.plans.delete(key)); // a failed generation is asked again next time
      this.plans.set(key, p);
    }
    return p;
  }

  async score(instance: Instance, report: string, round: number): Promise<JudgeRound> {
    const [p, q] = await Promise.all(
      (['p', 'q'] as const).map(async (m) => {
        const plan = await this.plan(instance, m);
        return aggregate(plan, await this.steps.score(instance, report, plan, round));
      }),
    );
    const r = (x: Record<string, number>, k: string) => x[k] as number;
    return {
      p: { goal: r(p!, 'goal'), content: r(p!, 'content'), presentation: r(p!, 'presentation'), actionability: r(p!, 'actionability'), overall: p!.overall },
      q: { depth: r(q!, 'depth'), logic: r(q!, 'logic'), clarity: r(q!, 'clarity'), overall: q!.overall },
    };
  }
}

export function judgeFrom(c: DownstreamConfig['judge'], o: { sink: CallSink; cacheDir: string }): ReportJudge {
  if (c.kind === 'embedded') return new PqrJudge(new StandInPqrSteps());
  const ep = createEndpoint(endpointOptions('judge', c), { sink: o.sink });
  return new PqrJudge(new LlmPqrSteps(c, withRequestCache(ep, o.cacheDir)));
}
