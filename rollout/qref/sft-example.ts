// A refiner demonstration (data/qref/schema.ts) as a generic SFT example
// (data/chat-sft-example.ts): the refiner's prompt in, the canonical turn text out (the
// paper's "standard autoregressive language modeling objective over the serialized target
// output"). The target is parsed back before it is returned, so an example the environment
// would reject never reaches SFT.
import type { ChatSftExample } from '../../data/chat-sft-example.ts';
import type { Demonstration } from '../../data/qref/schema.ts';
import { InputError } from '../../util/errors.ts';
import { refinerMessages } from './prompt.ts';
import { parseRefinerTurn, renderRefinerTurn, type RefinerCaps } from '../../structured/qref/turn.ts';

export function demonstrationExample(d: Demonstration, caps: RefinerCaps): ChatSftExample {
  const target = renderRefinerTurn({ rationale: d.rationale, queries: d.refined });
  const check = parseRefinerTurn(target, caps);
  if (!check.ok)
    throw new InputError(
      `demonstration ${d.id}: its target does not parse as a refiner turn (${check.reason}: ${check.detail}); fix the rationale or the refined queries`,
    );
  return {
    id: d.id,
    input: refinerMessages({ question: d.question, trace: d.trace, batch: d.batch }, caps),
    target,
    meta: { task: 'qref', split: d.split, ...(d.questionId !== undefined ? { questionId: d.questionId } : {}) },
  };
}
