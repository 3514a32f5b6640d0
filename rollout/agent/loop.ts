// The search agent's loop (rollout/agent/README.md; the QREF paper, method §13.5): at each step the
// backbone decides; a search's batch goes through the refiner (when there is one) to the
// search engine, each result list through the evidence filter, and the kept results come
// back as the observation; a visit reads one page; an answer ends the run. Limits: at most
// maxSteps decisions, maxSearches searches and maxReads reads; an action over its limit is
// not run (the backbone is told so), and the last allowed step accepts only an answer.
// Nothing here throws for what a model, the search engine or a page does: a refused backbone
// reply ends the run (`backbone_failed`), an invalid refiner turn is recorded (and the
// original batch is searched or nothing is, by `onInvalidRefinement`), a failed search or
// read is an observation. Infrastructure faults a caller must see (a 4xx from an endpoint,
// the policy server down) propagate from the parts as they do elsewhere.
import type { EvidenceFilter } from '../qref/evidence-filter.ts';
import { clip } from '../qref/filter-llm.ts';
import { searchBatch, type SearchBackend, type SearchOutcome } from '../qref/search.ts';
import type { AgentLimits, AgentRun, AgentStep, Backbone, Reader, Refiner, SearchRecord } from './types.ts';

export interface AgentDeps {
  backbone: Backbone;
  search: SearchBackend;
  /** Null: every result is shown (no filter). */
  filter: EvidenceFilter | null;
  /** Null: no refiner, the agent's own queries are sent. */
  refiner: Refiner | null;
  /** Null: visit actions are over the limit (maxReads is then taken as 0). */
  reader: Reader | null;
}

export interface AgentOptions {
  /** Also search each original batch (the QREF reward compares the two). */
  compareOriginal?: boolean;
  /**
   * An invalid refiner turn: `original` sends the agent's own batch (a plug-in refiner must not
   * stop the agent; the default), `skip` sends nothing (the QREF training episode, whose reward
   * charges the invalid turn).
   */
  onInvalidRefinement?: 'original' | 'skip';
}

function resultLines(o: SearchOutcome, kept: number[] | null, max: number): string[] {
  if (!o.ok) return [`  (search failed: ${o.reason})`];
  const shown = kept === null ? [] : kept.map((k) => o.hits[k]!);
  if (!shown.length) return ['  (no result kept)'];
  return shown.map((h) => `  - ${h.title} (${h.id}): ${clip(h.text, max)}`);
}

/** One search step: refine, search (and the original batch when compared), filter. */
async function searchStep(
  deps: AgentDeps,
  question: string,
  thought: string,
  queries: string[],
  limits: AgentLimits,
  o: AgentOptions,
): Promise<{ record: SearchRecord; observation: string }> {
  const refinement = deps.refiner ? await deps.refiner.refine({ question, trace: thought, batch: queries }) : null;
  const refined = refinement?.ok ? refinement.queries : null;
  const issued = refined ?? (refinement && o.onInvalidRefinement === 'skip' ? [] : queries);
  const [outcomes, originalOutcomes] = await Promise.all([
    searchBatch(deps.search, issued, limits.topK),
    o.compareOriginal ? searchBatch(deps.search, queries, limits.topK) : null,
  ]);
  const kept: (number[] | null)[] = [];
  for (const [j, out] of outcomes.entries()) {
    if (!out.ok) kept.push([]);
    else if (!deps.filter) kept.push(out.hits.map((_, k) => k));
    else {
      const d = await deps.filter.filter({ question, trace: thought, query: issued[j]!, results: out.hits });
      kept.push(d.ok ? d.kept : null);
    }
  }
  const record: SearchRecord = {
    original: queries,
    refined,
    rationale: refinement?.ok ? refinement.rationale : null,
    refiner: refinement === null ? 'none' : refinement.ok ? 'ok' : refinement.reason,
    issued,
    outcomes,
    originalOutcomes,
    kept,
  };
  const head =
    refinement && !refinement.ok
      ? [`(the refiner's turn was invalid: ${refinement.reason}${issued.length ? '; your own queries were sent' : '; nothing was sent'})`]
      : [];
  const body = issued.flatMap((q, j) => [`Results for "${q}":`, ...resultLines(outcomes[j]!, kept[j]!, limits.maxObservationChars)]);
  return { record, observation: [...head, ...body].join('\n') || '(nothing was searched)' };
}

/** Runs the agent on one question (starting from `trace`, "" for a fresh one) within `limits`. */
export async function runAgent(deps: AgentDeps, question: string, trace: string, limits: AgentLimits, o: AgentOptions = {}): Promise<AgentRun> {
  const steps: AgentStep[] = [];
  const maxReads = deps.reader ? limits.maxReads : 0;
  let [searches, reads] = [0, 0];
  for (let index = 0; index < limits.maxSteps; index++) {
    const left = { steps: limits.maxSteps - index, searches: limits.maxSearches - searches, reads: maxReads - reads };
    const mustAnswer = left.steps === 1 || (left.searches <= 0 && left.reads <= 0);
    const d = await deps.backbone.next({ question, trace, steps: [...steps], left, mustAnswer });
    if (!d.ok) {
      steps.push({ index, thought: '', action: 'backbone_failed', observation: `${d.reason}: ${d.detail}` });
      return { question, steps, answer: null, end: 'backbone_failed', searches, reads };
    }
    const a = d.decision;
    if (a.action === 'answer') {
      steps.push({ index, thought: a.thought, action: 'answer', observation: '' });
      return { question, steps, answer: a.answer, end: 'answer', searches, reads };
    }
    const over = mustAnswer || (a.action === 'search' ? left.searches <= 0 : left.reads <= 0);
    if (over) {
      steps.push({
        index,
        thought: a.thought,
        action: 'over_limit',
        observation: `(not run: ${mustAnswer ? 'this step accepts only an answer' : `no ${a.action === 'search' ? 'search' : 'read'} left`}; answer with what you have)`,
      });
      continue;
    }
    if (a.action === 'search') {
      searches++;
      const { record, observation } = await searchStep(deps, question, a.thought, a.queries, limits, o);
      steps.push({ index, thought: a.thought, action: 'search', search: record, observation });
    } else {
      reads++;
      const page = await deps.reader!.read(a.url);
      const observation = page.ok
        ? `Page ${page.url} (${page.title}):\n${clip(page.text, limits.maxObservationChars)}`
        : `(could not read ${a.url}: ${page.reason})`;
      steps.push({
        index,
        thought: a.thought,
        action: 'visit',
        visit: { url: a.url, ok: page.ok, detail: page.ok ? `${[...page.text].length} characters` : page.detail },
        observation,
      });
    }
  }
  return { question, steps, answer: null, end: 'step_limit', searches, reads };
}
