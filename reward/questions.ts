// method §4 behavioural counts over the Ask turns: n_rep (repeated questions) and n_multi
// (Ask turns holding more than one question).
import { cosine, type Encoder } from '../core/encoder.ts';

/**
 * Number of questions in one Ask text: the number of question-mark runs that end a
 * sentence, i.e. a run of "?" / "？" (ASCII or full-width, possibly mixed with "!") followed
 * by whitespace, a closing quote/bracket, or the end of the text; a run with a full-width
 * "？" always counts (CJK text puts no space after it).
 *   "What is your budget?"                      -> 1
 *   "What is your budget? And the timeline?"    -> 2
 *   "Budget?? Really?!"                         -> 2 (a run counts once)
 *   "See example.com/?q=1 — which one?"         -> 1 (a "?" inside a token is not a sentence end)
 * A compound question with one mark ("your budget and timeline?") counts as one: the
 * definition is syntactic on purpose, so it is deterministic and needs no model.
 */
export function countQuestions(text: string): number {
  let n = 0;
  for (const m of text.matchAll(/[?？][?？!！]*/gu)) {
    const next = text[m.index + m[0].length];
    // Full-width marks end a sentence wherever they are (CJK puts no space after them).
    if (m[0].includes('？') || next === undefined || /[\s"'”’)\]»]/u.test(next)) n++;
  }
  return n;
}

/** n_multi: Ask turns whose text holds more than one question. */
export function countMultiQuestion(questions: string[]): number {
  return questions.filter((q) => countQuestions(q) > 1).length;
}

/**
 * n_rep: Ask turns whose question has cosine >= threshold to ANY earlier question (method §4:
 * 0.86). Each repeating turn counts once, however many earlier questions it repeats.
 */
export async function countRepeated(questions: string[], threshold: number, encoder: Encoder): Promise<number> {
  if (questions.length < 2) return 0;
  const vecs = await encoder.embed(questions); // [Q, D]
  let n = 0;
  for (let k = 1; k < vecs.length; k++) {
    const vk = vecs[k] as Float32Array;
    if (vecs.slice(0, k).some((prev) => cosine(prev, vk) >= threshold)) n++;
  }
  return n;
}
