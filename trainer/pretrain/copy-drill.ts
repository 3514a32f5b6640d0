// Copy drills for a QREF base (`--pretrain-drill F`; models/tiny-qref/README.md, method §13.6):
// sequences that teach copying and nothing else. The user message lists 3-5 fresh names (1-3
// words each, drawn from the refiner examples' name pool, as the copy augmentation draws them);
// the target is a refiner turn whose queries repeat those names in order, one per line. Every
// name word is a copy target, against 1-4 per augmented demonstration, and the names are new
// in every sequence, so the only way to a low loss is to copy from the prompt (induction). A
// drill is a valid refiner turn (at most 5 queries), so the base sees no other format, and its
// fixed words are words of the refiner's prompts and turns (the trimmed vocabulary has them).
// docs/history/qref-demo.md: a 2-layer tiny model (input embedding std 1) copies plain drills
// after ~44,000 of them, but only in their own shape; `prompt` drills beside demonstrations with
// fresh names carry the copying into the refiner's prompts (models/tiny-qref's recipe).
import type { ChatMessage } from '../../data/chat-sft-example.ts';
import type { TrainableExample } from '../sft/tokens.ts';
import { QUERIES_HEADER, QUERY_BULLET, RATIONALE_HEADER } from '../../structured/qref/turn.ts';
import type { Rng } from '../../util/rng.ts';

/** Names per drill (a refiner turn holds at most 5 queries) and words per name. */
export const DRILL = { minNames: 3, maxNames: 5, maxWords: 3 } as const;
export const DRILL_HEADER = 'Question: search each name:';
export const DRILL_RATIONALE = `${RATIONALE_HEADER} One query per name.`;

/**
 * Where a drill's names stand. `plain`: the user message is the header and the names as query
 * lines, nothing else. `prompt`: the drill sits in a refiner prompt: the refiner's system message
 * and, after the header and the names (as query lines or as one sentence, "A, B and C.", a draw),
 * the rest of a real refiner prompt (its reasoning and candidate queries, other names among them),
 * so that copying is learned at the distances and among the distractors of the refiner's own
 * prompts (a base trained on plain drills alone copies in plain drills only:
 * docs/history/qref-demo.md).
 */
export type DrillShape = 'plain' | 'prompt';
export const DRILL_SHAPES: readonly DrillShape[] = ['plain', 'prompt'];

/** The refiner prompt a `prompt` drill sits in: the system message and the user text after the question. */
export interface DrillContext {
  system?: ChatMessage;
  rest: string;
}

/** The context of a `prompt` drill from a refiner example: its system message and its user message after the first paragraph. */
export function drillContext(ex: TrainableExample): DrillContext {
  const user = ex.input.find((m) => m.role === 'user')?.content ?? '';
  const cut = user.indexOf('\n\n');
  return { system: ex.input.find((m) => m.role === 'system'), rest: cut < 0 ? '' : user.slice(cut + 2) };
}

/**
 * One drill from `words` (the name pool, repeats weight the draw); the same `rng` state gives the
 * same drill. With a `context`, a `prompt` drill (DrillShape); without, a `plain` one.
 */
export function copyDrill(words: readonly string[], rng: Rng, context?: DrillContext): TrainableExample {
  if (!words.length) throw new Error('copyDrill: empty name pool');
  const k = DRILL.minNames + rng.int(DRILL.maxNames - DRILL.minNames + 1);
  const names = Array.from({ length: k }, () => Array.from({ length: 1 + rng.int(DRILL.maxWords) }, () => words[rng.int(words.length)]!).join(' '));
  const list = names.map((n) => `${QUERY_BULLET}${n}`).join('\n');
  const target = `${DRILL_RATIONALE}\n${QUERIES_HEADER}\n${list}`;
  const lines = `${DRILL_HEADER}\n${list}`;
  if (!context) return { trajectoryId: 'copy-drill', input: [{ role: 'user', content: lines }], target };
  const question = rng.next() < 0.5 ? lines : `${DRILL_HEADER} ${names.slice(0, -1).join(', ')} and ${names.at(-1)}.`;
  const user: ChatMessage = { role: 'user', content: context.rest ? `${question}\n\n${context.rest}` : question };
  return { trajectoryId: 'copy-drill', input: context.system ? [context.system, user] : [user], target };
}
