// Refiner demonstrations as generic SFT examples (rollout/qref/sft-example.ts, prompt.ts).
import { describe, expect, it } from 'vitest';
import { QrefSchema } from '../../../configs/qref.ts';
import { ChatSftExampleSchema } from '../../../data/chat-sft-example.ts';
import { loadQref } from '../../../data/qref/load.ts';
import { refinerSystemPrompt } from '../../../rollout/qref/prompt.ts';
import { demonstrationExample } from '../../../rollout/qref/sft-example.ts';
import { parseRefinerTurn } from '../../../structured/qref/turn.ts';
import { InputError } from '../../../util/errors.ts';

const CFG = QrefSchema.parse({});
const data = loadQref({ corpus: CFG.data.corpus, questions: CFG.data.questions, demonstrations: CFG.data.demonstrations }, CFG.turn);

describe('demonstrationExample', () => {
  it('input = system + user message with question, trace and batch; target = the canonical turn', () => {
    const d = data.demonstrations.find((x) => x.id === 'demo-001')!;
    const ex = demonstrationExample(d, CFG.turn);
    expect(ChatSftExampleSchema.parse(ex)).toEqual(ex);
    expect(ex.input[0]).toEqual({ role: 'system', content: refinerSystemPrompt(CFG.turn) });
    expect(ex.input[1]!.role).toBe('user');
    expect(ex.input[1]!.content).toBe(
      [`Question: ${d.question}`, '', 'Reasoning so far:', d.trace, '', 'Candidate queries:', ...d.batch.map((q) => `- ${q}`)].join('\n'),
    );
    expect(ex.target).toBe(`RATIONALE: ${d.rationale}\nQUERIES:\n${d.refined.map((q) => `- ${q}`).join('\n')}`);
    expect(ex.meta).toEqual({ task: 'qref', split: 'train', questionId: 'q-001' });
  });

  it('every demo demonstration becomes an example whose target parses back to its rationale and queries', () => {
    for (const d of data.demonstrations) {
      const ex = demonstrationExample(d, CFG.turn);
      expect(parseRefinerTurn(ex.target, CFG.turn)).toEqual({ ok: true, turn: { rationale: d.rationale, queries: d.refined } });
    }
  });

  it('an empty trace is shown as "(none yet)"; a target outside the caps is refused', () => {
    const d = { ...data.demonstrations[0]!, trace: '  ' };
    expect(demonstrationExample(d, CFG.turn).input[1]!.content).toContain('Reasoning so far:\n(none yet)\n');
    expect(() => demonstrationExample({ ...d, refined: ['a', 'b'] }, { ...CFG.turn, maxQueries: 1 })).toThrow(InputError);
  });
});
