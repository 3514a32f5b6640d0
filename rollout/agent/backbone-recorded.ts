// A backbone that replays one recorded search step (a QREF question record, data/qref/schema.ts:
// the agent's reasoning trace tau_t and candidate batch Q_t, as the paper's training instances
// are "one search turn in an agent trajectory"): its first decision is that search, its next
// an answer (the record's gold answer when it has one, else ""). The QREF environment drives
// its training episode with it (rollout/qref/env.ts), so the episode is the agent loop's
// search step: refine, search, filter.
import type { AgentView, Backbone, BackboneDecision } from './types.ts';

export interface RecordedStep {
  trace: string;
  batch: readonly string[];
  answer?: string;
}

export class RecordedBackbone implements Backbone {
  readonly name = 'recorded';
  constructor(private readonly step: RecordedStep) {}

  async next(view: AgentView): Promise<BackboneDecision> {
    if (view.steps.length === 0 && !view.mustAnswer)
      return { ok: true, decision: { action: 'search', thought: this.step.trace, queries: [...this.step.batch] } };
    return { ok: true, decision: { action: 'answer', thought: this.step.trace, answer: this.step.answer ?? '' } };
  }
}
