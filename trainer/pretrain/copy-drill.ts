// Copy drills for a QREF base (`--pretrain-drill F`; models/tiny-qref/README.md, method §13.6):
// sequences that teach copying and nothing else. The user message lists 3-5 fresh names (1-3
// words each, drawn from the refiner examples' name pool, as the copy augmentation draws them);
// the target is a refiner turn whose queries repeat those names in order, one per line. Every
// name word is a copy target, against 1-4 per augmented demonstration, and the names are new
// in every sequence, so the only way to a low loss is to copy from the prompt (induction). A
// drill is a valid refiner turn (at most 5 queries), so the base sees no other format, and its
// fixed words are words of the refiner's prompts and turns (the trimmed vocabulary has them).
// docs/history/qref-demo.md: a 2-layer tiny model learns one name at a fixed place from ~3,000
// such sequences; several names need many more.
import type { TrainableExample } from '../sft/tokens.ts';
import { QUERIES_HEADER, QUERY_BULLET, RATIONALE_HEADER } from '../../structured/qref/turn.ts';
import type { Rng } from '../../util/rng.ts';

/** Names per drill (a refiner turn holds at most 5 queries) and words per name. */
export const DRILL = { minNames: 3, maxNames: 5, maxWords: 3 } as const;
export const DRILL_HEADER = 'Question: search each name:';
export const DRILL_RATIONALE = `${RATIONALE_HEADER} One query per name.`;

/** One drill from `words` (the name pool, repeats weight the draw); the same `rng` state gives the same drill. */
export function copyDrill(words: readonly string[], rng: Rng): TrainableExample {
  if (!words.length) throw new Error('copyDrill: empty name pool');
  const k = DRILL.minNames + rng.int(DRILL.maxNames - DRILL.minNames + 1);
  const names = Array.from({ length: k }, () => Array.from({ length: 1 + rng.int(DRILL.maxWords) }, () => words[rng.int(words.length)]!).join(' '));
  const list = names.map((n) => `${QUERY_BULLET}${n}`).join('\n');
  return {
    trajectoryId: 'copy-drill',
    input: [{ role: 'user', content: `${DRILL_HEADER}\n${list}` }],
    target: `${DRILL_RATIONALE}\n${QUERIES_HEADER}\n${list}`,
  };
}
