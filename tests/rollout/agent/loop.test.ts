// The search agent's loop (rollout/agent/loop.ts) with a scripted backbone, the embedded BM25
// backend over a hand-made corpus, the rule filter, the corpus reader and a scripted refiner:
// which actions run, what is sent, what the backbone is told, and the step limits.
import { describe, expect, it } from 'vitest';
import { runAgent, type AgentDeps } from '../../../rollout/agent/loop.ts';
import { CorpusReader } from '../../../rollout/agent/reader.ts';
import type { AgentLimits, AgentView, Backbone, BackboneAction, Refinement, Refiner } from '../../../rollout/agent/types.ts';
import { Bm25Search } from '../../../rollout/qref/bm25.ts';
import { RuleEvidenceFilter } from '../../../rollout/qref/filter-rule.ts';

const corpus = [
  { id: 'd1', title: 'Amos Kell', text: 'Amos Kell, the engineer, was born in Marrowby.' },
  { id: 'd2', title: 'Kestwick Bridge', text: 'Kestwick Bridge: stone arches over the river, designed by Amos Kell.' },
  { id: 'd3', title: 'Oat cakes', text: 'A cooking recipe with oats and butter.' },
];
const limits: AgentLimits = { maxSteps: 6, maxSearches: 2, maxReads: 1, topK: 2, maxObservationChars: 200 };

/** Replays `actions` in order (then answers), recording every view it was shown. */
class Scripted implements Backbone {
  readonly name = 'scripted';
  readonly views: AgentView[] = [];
  constructor(private readonly actions: BackboneAction[]) {}
  async next(view: AgentView) {
    this.views.push(view);
    return { ok: true as const, decision: this.actions[this.views.length - 1] ?? { action: 'answer' as const, thought: 'done', answer: 'A' } };
  }
}
const refiner = (r: Refinement): Refiner & { inputs: unknown[] } => {
  const inputs: unknown[] = [];
  return { inputs, refine: async (input) => (inputs.push(input), r) };
};
const deps = (backbone: Backbone, over: Partial<AgentDeps> = {}): AgentDeps => ({
  backbone,
  search: new Bm25Search(corpus),
  filter: new RuleEvidenceFilter(0.45),
  refiner: null,
  reader: new CorpusReader(corpus),
  ...over,
});
const search = (queries: string[], thought = 't'): BackboneAction => ({ action: 'search', thought, queries });

describe('runAgent', () => {
  it('searches, reads and answers; each observation is what the filter kept or the page read', async () => {
    const b = new Scripted([
      search(['Amos Kell born'], 'need the birthplace'),
      { action: 'visit', thought: 'read it', url: 'd1' },
      { action: 'answer', thought: 'found', answer: 'Marrowby' },
    ]);
    const run = await runAgent(deps(b), 'Where was Amos Kell born?', '', limits);
    expect(run).toMatchObject({ end: 'answer', answer: 'Marrowby', searches: 1, reads: 1 });
    expect(run.steps.map((s) => s.action)).toEqual(['search', 'visit', 'answer']);
    // "Amos Kell born" ranks d1 (three terms) then d2 (amo, kell). The rule's need is the distinct
    // terms of question and query, {where, amo, kell, born} ("was" is a stop word): d1 holds 3 of 4,
    // d2 2 of 4, both >= 0.45, both kept
    const s = run.steps[0]!.search!;
    expect(s.outcomes.map((o) => (o.ok ? o.hits.map((h) => h.id) : null))).toEqual([['d1', 'd2']]);
    expect(s.kept).toEqual([[0, 1]]);
    expect(s).toMatchObject({ original: ['Amos Kell born'], issued: ['Amos Kell born'], refined: null, refiner: 'none', originalOutcomes: null });
    expect(run.steps[0]!.observation).toContain('Results for "Amos Kell born":\n  - Amos Kell (d1): Amos Kell, the engineer, was born in Marrowby.');
    expect(run.steps[1]!.observation).toBe('Page d1 (Amos Kell):\nAmos Kell, the engineer, was born in Marrowby.');
    // the backbone saw its earlier steps and what was left
    expect(b.views.map((v) => v.left)).toEqual([
      { steps: 6, searches: 2, reads: 1 },
      { steps: 5, searches: 1, reads: 1 },
      { steps: 4, searches: 1, reads: 0 },
    ]);
    expect(b.views[2]!.steps).toHaveLength(2);
  });

  it('the refiner rewrites the batch; an invalid turn sends the original batch, or nothing with skip', async () => {
    const ok = refiner({ ok: true, rationale: 'anchor on the engineer', queries: ['Amos Kell'] });
    const run = await runAgent(deps(new Scripted([search(['Kestwick Bridge'], 'tau')]), { refiner: ok }), 'Q?', 'trace', limits, { compareOriginal: true });
    expect(ok.inputs).toEqual([{ question: 'Q?', trace: 'tau', batch: ['Kestwick Bridge'] }]);
    const s = run.steps[0]!.search!;
    expect(s).toMatchObject({ refined: ['Amos Kell'], issued: ['Amos Kell'], rationale: 'anchor on the engineer', refiner: 'ok' });
    expect(s.originalOutcomes?.map((o) => (o.ok ? o.hits.map((h) => h.id) : null))).toEqual([['d2']]);
    const bad: Refinement = { ok: false, reason: 'unexpected_line', detail: 'x' };
    const fallback = await runAgent(deps(new Scripted([search(['Kestwick Bridge'])]), { refiner: refiner(bad) }), 'Q?', '', limits);
    expect(fallback.steps[0]!.search).toMatchObject({ refined: null, refiner: 'unexpected_line', issued: ['Kestwick Bridge'] });
    expect(fallback.steps[0]!.observation).toMatch(/^\(the refiner's turn was invalid: unexpected_line; your own queries were sent\)/);
    const skipped = await runAgent(deps(new Scripted([search(['Kestwick Bridge'])]), { refiner: refiner(bad) }), 'Q?', '', limits, {
      onInvalidRefinement: 'skip',
    });
    expect(skipped.steps[0]!.search).toMatchObject({ issued: [], outcomes: [], kept: [] });
  });

  it('an action over its limit is not run; the last step accepts only an answer', async () => {
    const b = new Scripted([
      search(['a']),
      search(['b']),
      search(['c']),
      { action: 'visit', thought: '', url: 'd9' },
      { action: 'visit', thought: '', url: 'd1' },
      search(['d']),
    ]);
    const run = await runAgent(deps(b), 'Q?', '', limits);
    expect(run.steps.map((s) => s.action)).toEqual(['search', 'search', 'over_limit', 'visit', 'over_limit', 'over_limit']);
    expect(run.steps[2]!.observation).toBe('(not run: no search left; answer with what you have)');
    expect(run.steps[3]!.observation).toBe('(could not read d9: not_found)');
    expect(run.steps[3]!.visit).toMatchObject({ url: 'd9', ok: false });
    // after step 5 nothing is left (0 searches, 0 reads): the view says only an answer is accepted
    expect(b.views.map((v) => v.mustAnswer)).toEqual([false, false, false, false, true, true]);
    expect(run.steps[5]!.observation).toBe('(not run: this step accepts only an answer; answer with what you have)');
    expect(run).toMatchObject({ end: 'step_limit', answer: null, searches: 2, reads: 1 });
  });

  it('no reader: a visit is over the limit; a failed backbone decision ends the run', async () => {
    const run = await runAgent(deps(new Scripted([{ action: 'visit', thought: '', url: 'd1' }]), { reader: null }), 'Q?', '', limits);
    expect(run.steps[0]!.action).toBe('over_limit');
    const failing: Backbone = { name: 'f', next: async () => ({ ok: false, reason: 'failed_call', detail: 'reply refused 4 times' }) };
    const dead = await runAgent(deps(failing), 'Q?', '', limits);
    expect(dead).toMatchObject({
      end: 'backbone_failed',
      answer: null,
      steps: [{ action: 'backbone_failed', observation: 'failed_call: reply refused 4 times' }],
    });
  });
});
