// The report judge of downstream evaluation (method §12; paper: the PDR-Bench PQR evaluator,
// GPT-5.4, three independent scoring rounds per report and metric, averaged). One round
// scores personalization alignment P (goal, content, presentation, actionability, and the
// judge's weighted overall) and content quality Q (depth, logic, clarity, overall), each 0..10.
// Factual reliability (R) is not scored: the paper omits it (it reflects the fixed DRA's
// citation behaviour, not the query).
//   - `llm`: per round one P call and one Q call (PQR scores each metric separately) through
//     endpoints/ `chatJson` with a zod schema (sent as response_format json_schema), request-
//     cached by hash; round k sends `seed: k`, so the rounds are distinct requests (and a
//     re-run replays them from the cache). A reply that breaks the schema is retried by the
//     endpoint rule; after the last retry the call fails (ReplyError), never a made-up score.
//   - `embedded`: a deterministic STAND-IN with the persona's elicitation targets as its
//     rubric (the PQR judge also reads the persona): a target counts as addressed when at
//     least half of its content words (eval/extractor-rule.ts contentWords of description +
//     criterion) appear in the report. goal = 10 x essential weight addressed / essential
//     weight (all targets when none is essential); content = 10 x weight addressed / weight;
//     presentation = 10 x targets addressed / targets (it cannot read style preferences);
//     actionability = 10 x weight addressed inside list items / weight; P overall = mean of the
//     four (PQR weighs them per task and persona). depth = 10 x min(1, distinct content words /
//     150); logic = 10 x sections with a body / sections (5 without headings); clarity = 10 x
//     sentences of at most 30 words / sentences; Q overall = mean of the three. Every round
//     gives the same scores (no sampling). Not paper numbers; every output says so.
import { z } from 'zod';
import type { DownstreamConfig } from '../../configs/downstream.ts';
import { personaLines } from '../../data/persona.ts';
import { targetText, type Instance } from '../../data/schema.ts';
import { createEndpoint, defaultChatTemplateKwargs, withRequestCache, type CallSink, type Endpoint } from '../../endpoints/index.ts';
import type { DownstreamScores } from '../downstream-scores.ts';
import { contentWords, sentences } from '../extractor-rule.ts';
import { mean } from '../../util/stats.ts';

export type JudgeRound = DownstreamScores['scores'][number]['rounds'][number];

export interface ReportJudge {
  readonly model: string | null;
  readonly standIn: boolean;
  /** Round `round` (0-based) of the scores of `report`, written for `instance`'s user and query. */
  score(instance: Instance, report: string, round: number): Promise<JudgeRound>;
}

const s10 = z.number().min(0).max(10);
export const P_SCHEMA = z.object({ goal: s10, content: s10, presentation: s10, actionability: s10, overall: s10 }).strict();
export const Q_SCHEMA = z.object({ depth: s10, logic: s10, clarity: s10, overall: s10 }).strict();

export const P_PROMPT = `You are an expert evaluator of personalized deep-research reports (PQR personalization alignment).
You are given a user's persona, the user's research task, and a report written for it. Judge how well the report is personalized to THIS user.
Score each criterion from 0 (not at all) to 10 (fully):
- goal: alignment with the user's goals and intent behind the task
- content: relevance of the content to the user's specific situation, constraints and background
- presentation: fit of the structure, level of detail and style to the user's preferences
- actionability: how directly the user can act on the report given their circumstances
- overall: your overall personalization score, weighing the four criteria by what matters most for this user and task
Reply with one JSON object {"goal": n, "content": n, "presentation": n, "actionability": n, "overall": n} and nothing else.`;

export const Q_PROMPT = `You are an expert evaluator of deep-research reports (PQR content quality).
You are given a research task and a report written for it. Judge the report's quality regardless of who asked.
Score each criterion from 0 (very poor) to 10 (excellent):
- depth: breadth and depth of analysis, evidence and insight
- logic: coherence and soundness of the argument and structure
- clarity: clear, precise, readable writing
- overall: your overall quality score
Reply with one JSON object {"depth": n, "logic": n, "clarity": n, "overall": n} and nothing else.`;

export function personaText(i: Instance): string {
  const lines = [i.profile.trim(), ...personaLines(i.persona)].filter(Boolean);
  return lines.length ? lines.join('\n') : '(no persona given)';
}

export class LlmJudge implements ReportJudge {
  readonly standIn = false;
  readonly model: string;
  constructor(private readonly c: DownstreamConfig['judge'], private readonly ep: Endpoint) {
    this.model = c.model;
  }

  async score(instance: Instance, report: string, round: number): Promise<JudgeRound> {
    const sampling = { seed: round, ...(this.c.temperature !== null ? { temperature: this.c.temperature } : {}), ...(this.c.maxTokens !== null ? { maxTokens: this.c.maxTokens } : {}) };
    const task = `RESEARCH TASK:\n${instance.query}\n\nREPORT:\n${report}`;
    const [p, q] = await Promise.all([
      this.ep.chatJson({ messages: [{ role: 'system', content: P_PROMPT }, { role: 'user', content: `USER PERSONA:\n${personaText(instance)}\n\n${task}` }], ...sampling }, { name: 'personalization', schema: P_SCHEMA }),
      this.ep.chatJson({ messages: [{ role: 'system', content: Q_PROMPT }, { role: 'user', content: task }], ...sampling }, { name: 'quality', schema: Q_SCHEMA }),
    ]);
    return { p: p.value, q: q.value };
  }
}

/** True when at least half of the text's distinct content words are in `words`. */
function addressed(text: string, words: ReadonlySet<string>): boolean {
  const own = [...new Set(contentWords(text))];
  return own.length > 0 && own.filter((w) => words.has(w)).length / own.length >= 0.5;
}

/** The stand-in's scores (see the file comment); pure and deterministic. */
export function standInScores(instance: Instance, report: string): JudgeRound {
  const all = new Set(contentWords(report));
  const listed = new Set(contentWords(report.split('\n').filter((l) => /^\s*(?:[-*+]|\d+[.)])\s/.test(l)).join('\n')));
  const ts = instance.targets.map((t) => ({ w: Math.max(0, t.weight), essential: t.essential, hit: addressed(targetText(t), all), act: addressed(targetText(t), listed) }));
  const frac = (xs: typeof ts, f: (t: (typeof ts)[number]) => boolean) => {
    const w = xs.reduce((a, t) => a + t.w, 0);
    return w > 0 ? xs.filter(f).reduce((a, t) => a + t.w, 0) / w : 0;
  };
  const ess = ts.some((t) => t.essential) ? ts.filter((t) => t.essential) : ts;
  const goal = 10 * frac(ess, (t) => t.hit);
  const content = 10 * frac(ts, (t) => t.hit);
  const presentation = ts.length ? (10 * ts.filter((t) => t.hit).length) / ts.length : 0;
  const actionability = 10 * frac(ts, (t) => t.act);

  const depth = 10 * Math.min(1, all.size / 150);
  const sections = report.split(/^#{1,6}\s.*$/m).slice(1);
  const logic = sections.length ? (10 * sections.filter((b) => b.trim().length > 0).length) / sections.length : 5;
  const sents = sentences(report.replace(/^#{1,6}\s.*$/gm, ''));
  const clarity = sents.length ? (10 * sents.filter((x) => x.split(/\s+/).length <= 30).length) / sents.length : 0;
  return {
    p: { goal, content, presentation, actionability, overall: mean([goal, content, presentation, actionability]) },
    q: { depth, logic, clarity, overall: mean([depth, logic, clarity]) },
  };
}

export class StandInJudge implements ReportJudge {
  readonly model = null;
  readonly standIn = true;
  async score(instance: Instance, report: string): Promise<JudgeRound> {
    return standInScores(instance, report);
  }
}

export function judgeFrom(c: DownstreamConfig['judge'], o: { sink: CallSink; cacheDir: string }): ReportJudge {
  if (c.kind === 'embedded') return new StandInJudge();
  const ep = createEndpoint(
    { role: 'judge', baseUrl: c.baseUrl as string, model: c.model, apiKeyEnv: c.apiKeyEnv, timeoutMs: c.timeoutMs, maxRetries: c.maxRetries, concurrency: c.concurrency, responseFormat: c.responseFormat, chatTemplateKwargs: defaultChatTemplateKwargs(c.model) },
    { sink: o.sink },
  );
  return new LlmJudge(c, withRequestCache(ep, o.cacheDir));
}
