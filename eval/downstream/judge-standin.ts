// The embedded STAND-IN of the PQR judge's steps (judge.ts, pqr.ts): deterministic, no model.
// Its criteria are the instance's elicitation targets (the persona's needs PDR-Bench's criteria
// are written from), so its scores move with what a report addresses; every round gives the same
// scores. Not paper numbers; every output says so. Its rules:
//   weights (P)  goal 1 + E, content 1 + O, presentation 1, actionability 1, divided by their sum
//                (E, O: the share of target weight on essential / optional targets: a task whose
//                weight sits on essential targets weighs goal alignment more); (Q) 1/3 each
//   criteria     goal: "addresses <target>" per essential target (every target when none is);
//                content: the same per target; actionability: "gives an actionable
//                recommendation on <target>" per target; each weighted by the target's weight.
//                presentation: "is organized in sections with headings". depth: "covers many
//                distinct points"; logic: "every section has a body"; clarity: "sentences of at
//                most 30 words"; weight 1 each
//   scorer       a target criterion: round(10 x the share of the target's content words in the
//                report; actionability: in its list items); presentation and logic: round(10 x
//                sections with a body / sections), 5 without headings; depth: round(10 x min(1,
//                distinct content words / 150)); clarity: round(10 x sentences of <= 30 words /
//                sentences). Integers 0..10, as the LLM scorer's.
import { targetText, type Instance, type Target } from '../../data/schema.ts';
import { contentWords, sentences } from '../extractor-rule.ts';
import type { Dimension, Metric, MetricPlan, PqrSteps } from './pqr.ts';

const ADDRESSES = 'addresses: ';
const ACTS = 'gives an actionable recommendation on: ';

/** The share of the text's distinct content words found in `words` (0 for a text without any). */
function share(text: string, words: ReadonlySet<string>): number {
  const own = [...new Set(contentWords(text))];
  return own.length ? own.filter((w) => words.has(w)).length / own.length : 0;
}

const sections = (report: string) => report.split(/^#{1,6}\s.*$/m).slice(1);

export class StandInPqrSteps implements PqrSteps {
  readonly model = null;
  readonly standIn = true;

  async weights(instance: Instance, metric: Metric): Promise<Record<string, number>> {
    if (metric === 'q') return { depth: 1 / 3, logic: 1 / 3, clarity: 1 / 3 };
    const total = instance.targets.reduce((a, t) => a + Math.max(0, t.weight), 0);
    const ess = instance.targets.filter((t) => t.essential).reduce((a, t) => a + Math.max(0, t.weight), 0);
    const E = total > 0 ? ess / total : 0;
    const raw = { goal: 1 + E, content: 1 + (total > 0 ? 1 - E : 0), presentation: 1, actionability: 1 };
    const sum = raw.goal + raw.content + raw.presentation + raw.actionability;
    return Object.fromEntries(Object.entries(raw).map(([d, w]) => [d, w / sum]));
  }

  async criteria(instance: Instance, _metric: Metric, d: Dimension): Promise<{ text: string; weight: number }[]> {
    const targets = (ts: readonly Target[]) =>
      ts.map((t) => ({ text: `${d === 'actionability' ? ACTS : ADDRESSES}${targetText(t)}`, weight: Math.max(0, t.weight) }));
    const essential = instance.targets.filter((t) => t.essential);
    switch (d) {
      case 'goal':
        return targets(essential.length ? essential : instance.targets);
      case 'content':
      case 'actionability':
        return targets(instance.targets);
      case 'presentation':
        return [{ text: 'is organized in sections with headings', weight: 1 }];
      case 'depth':
        return [{ text: 'covers many distinct points', weight: 1 }];
      case 'logic':
        return [{ text: 'every section has a body', weight: 1 }];
      case 'clarity':
        return [{ text: 'sentences of at most 30 words', weight: 1 }];
    }
  }

  async score(_instance: Instance, report: string, plan: MetricPlan): Promise<Map<string, number>> {
    const all = new Set(contentWords(report));
    const listed = new Set(
      contentWords(
        report
          .split('\n')
          .filter((l) => /^\s*(?:[-*+]|\d+[.)])\s/.test(l))
          .join('\n'),
      ),
    );
    const secs = sections(report);
    const structure = secs.length ? secs.filter((b) => b.trim().length > 0).length / secs.length : 0.5;
    const sents = sentences(report.replace(/^#{1,6}\s.*$/gm, ''));
    const out = new Map<string, number>();
    for (const cs of Object.values(plan.criteria))
      for (const c of cs) {
        const x = c.text.startsWith(ACTS)
          ? share(c.text.slice(ACTS.length), listed)
          : c.text.startsWith(ADDRESSES)
            ? share(c.text.slice(ADDRESSES.length), all)
            : c.id.startsWith('depth.')
              ? Math.min(1, all.size / 150)
              : c.id.startsWith('clarity.')
                ? sents.length
                  ? sents.filter((s) => s.split(/\s+/).length <= 30).length / sents.length
                  : 0
                : structure; // presentation, logic
        out.set(c.id, Math.round(10 * x));
      }
    return out;
  }
}
