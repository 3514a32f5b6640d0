// Copy augmentation for a QREF refiner example (`--pretrain-augment F` on a file of chat SFT
// examples, the QREF environment's sft-example.ts): the names and numbers the refined queries take from
// the question, the reasoning trace and the candidate batch are replaced, consistently in the
// prompt and the target (rationale included), by other names drawn from the examples and by
// other numbers of the same length. The demo's 44 demonstrations name a few dozen entities; a
// base trained on them alone recalls "Amos Kell" by its n-grams. With fresh names each time,
// the only way to the right query is to copy the entity from the question and the trace
// (models/tiny-qref/README.md).
//
// A copied word: a word of a target query line (`- ...` after QUERIES:) that starts with an
// upper-case letter (not a capitalised function word such as "The" or "Who") or is a number
// of 2+ digits, and that also occurs in the user message. Words are Unicode letter/digit runs,
// so "Kell's" maps "Kell" and keeps "'s". The mapping is one word -> one word, applied to every
// whole-word occurrence with the same case, so a name mentioned in part ("Kell") maps with it.
import type { ChatMessage } from '../../data/chat-sft-example.ts';
import { parseRefinerTurn, QUERIES_HEADER, QUERY_BULLET, RATIONALE_HEADER } from '../../structured/qref/turn.ts';
import type { Rng } from '../../util/rng.ts';

/** Capitalised function words that open questions and queries, and the prompt's headers; never swapped. */
const KEEP = new Set(
  'Candidate Question Reasoning A An And As At By Did Do Does For From How I In Is It Its Of On Or The To Was Were What When Where Which Who Whom Whose Why With'.split(
    ' ',
  ),
);
/** A word: a Unicode letter/digit run. */
export const WORD = /[\p{L}\p{N}]+/gu;
const NAME = /^\p{Lu}/u;
const NUMBER = /^\d{2,}$/;

interface Refinable {
  input: readonly ChatMessage[];
  target: string;
}

/** Whether an example is a refiner example (its target is a refiner turn), not a G-STEER step. */
export const isRefinerExample = (ex: Refinable): boolean => ex.target.startsWith(RATIONALE_HEADER);

/** Whether a file's examples are all refiner examples (and it has some): their names are the pool. */
export const areRefinerExamples = (examples: readonly Refinable[]): boolean => examples.length > 0 && examples.every(isRefinerExample);

const copyable = (w: string) => (NAME.test(w) && !KEEP.has(w)) || NUMBER.test(w);

/** The query lines of a refiner target. */
function queryLines(target: string): string[] {
  const lines = target.split('\n');
  const at = lines.findIndex((l) => l.trim() === QUERIES_HEADER);
  return at < 0
    ? []
    : lines
        .slice(at + 1)
        .filter((l) => l.startsWith(QUERY_BULLET))
        .map((l) => l.slice(QUERY_BULLET.length));
}

const userText = (ex: Refinable) =>
  ex.input
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');

/** The distinct copied words of one example, in order of first use in its queries. */
export function copiedWords(ex: Refinable): string[] {
  const prompt = new Set(userText(ex).match(WORD) ?? []);
  const out = new Set<string>();
  for (const q of queryLines(ex.target)) for (const w of q.match(WORD) ?? []) if (copyable(w) && prompt.has(w)) out.add(w);
  return [...out];
}

/** Every name-like word of the examples' user messages (with repeats), the pool fresh names are drawn from. */
export function refinerNameWords(examples: readonly Refinable[]): string[] {
  return examples.flatMap((ex) => (userText(ex).match(WORD) ?? []).filter((w) => NAME.test(w) && !KEEP.has(w)));
}

/**
 * The example with every copied word replaced (user messages and target; the system message is
 * the fixed instructions) by a fresh one: a name from `names` other than the word itself, or a
 * number of the same length. Null when nothing is copied or the result is not a refiner turn.
 */
export function augmentRefinerExample<T extends Refinable>(ex: T, names: readonly string[], rng: Rng): T | null {
  const words = copiedWords(ex);
  if (!words.length || !names.length) return null;
  const fresh = new Map<string, string>();
  for (const w of words) {
    if (NUMBER.test(w)) fresh.set(w, String(1 + rng.int(9)) + Array.from({ length: w.length - 1 }, () => rng.int(10)).join(''));
    else {
      let n = names[rng.int(names.length)]!;
      for (let tries = 0; n === w && tries < 8; tries++) n = names[rng.int(names.length)]!;
      fresh.set(w, n);
    }
  }
  const swap = (text: string) => text.replace(WORD, (w) => fresh.get(w) ?? w);
  const out: T = { ...ex, input: ex.input.map((m) => (m.role === 'user' ? { ...m, content: swap(m.content) } : m)), target: swap(ex.target) };
  const caps = { maxQueries: Number.MAX_SAFE_INTEGER, maxQueryChars: Number.MAX_SAFE_INTEGER, maxRationaleChars: Number.MAX_SAFE_INTEGER };
  return parseRefinerTurn(out.target, caps).ok ? out : null;
}
