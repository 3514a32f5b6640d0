// Copy augmentation for base pretraining (`--pretrain-augment F`): an SFT example whose
// user-specific values (what the policy copies from its prompt into STATE and the refined
// query) are replaced, consistently in prompt and target, by random words. The demo's 15
// users repeat the same few dozen values in every sequence, so a base trained on them alone
// recalls values by their n-grams and, sampled on an unseen prompt, drifts from one
// memorized value into another (docs/history/demo-base.md, "The demo's budget"). With fresh words
// each time, the only way to the right value is to copy it from the prompt.
//
// Copied values: STATE `value:` fields, `MEMORY: name (purpose): value` and `USER: answer`
// lines, and the QUERY after turn 1 (turn 1 derives the slots from the query itself). Each
// becomes as many words drawn from the words of every value in the file, ending in the
// value's own closing punctuation, so the tokens stay those of the data (the trimmed
// vocabulary keeps them).
import { parseTurn } from '../../structured/turn/grammar.ts';
import type { SftExample } from '../../data/sft/example.ts';
import type { Rng } from '../../util/rng.ts';

const PATTERNS = [/\| value: (.+)$/gm, /^\s*MEMORY: \S+ \(.*?\): (.+)$/gm, /^\s*USER: (.+)$/gm];
const QUERY = /^QUERY: (.+)$/gm;
const TAIL = /[^\p{L}\p{N}]+$/u;

/** The user messages and the target (the system message is the fixed instructions, whose format line has `| value: <...>`). */
function texts(ex: SftExample): string[] {
  return [...ex.input.filter((m) => m.role !== 'system').map((m) => m.content), ex.target];
}

/** The distinct values the policy copies in this example, longest first. */
export function copiedValues(ex: SftExample): string[] {
  const out = new Set<string>();
  const patterns = ex.step > 0 ? [...PATTERNS, QUERY] : PATTERNS;
  for (const text of texts(ex)) for (const re of patterns) for (const m of text.matchAll(re)) if (m[1]!.trim()) out.add(m[1]!.trim());
  return [...out].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
}

/** Every word of every copied value in the examples (with repeats: common words are drawn more often). */
export function valueWords(examples: readonly SftExample[]): string[] {
  return examples.flatMap((ex) => copiedValues(ex).flatMap((v) => v.split(/\s+/).filter(Boolean)));
}

/**
 * The example with each copied value replaced everywhere (prompt and target) by the same
 * number of words drawn from `words`; null when there is nothing to replace or the result
 * would not parse as the same turn (the same action and slot names): the caller then
 * trains on the example unchanged.
 */
export function augmentExample(ex: SftExample, words: readonly string[], rng: Rng): SftExample | null {
  const values = copiedValues(ex);
  if (!values.length || !words.length) return null;
  const fresh = values.map((v) => {
    const drawn = Array.from(v.split(/\s+/).filter(Boolean), () => words[rng.int(words.length)]!).join(' ');
    // the value's own closing punctuation, so the tokens at its end ("." + newline, ".;") stay those of the data
    return drawn.replace(TAIL, '') + (TAIL.exec(v)?.[0] ?? '');
  });
  // two passes through placeholders, so a value inside a longer one (or inside a replacement) is never rewritten twice
  const mark = (i: number) => `\u0001${i}\u0002`;
  const swap = (text: string) => {
    let t = text;
    values.forEach((v, i) => void (t = t.split(v).join(mark(i))));
    return t.replace(/\u0001(\d+)\u0002/g, (_, i: string) => fresh[Number(i)]!);
  };
  const out: SftExample = { ...ex, input: ex.input.map((m) => (m.role === 'system' ? m : { ...m, content: swap(m.content) })), target: swap(ex.target) };
  const before = parseTurn(ex.target);
  const after = parseTurn(out.target);
  if (!before.ok || !after.ok || before.turn.action !== after.turn.action) return null;
  const names = (s: { name: string }[]) => s.map((x) => x.name).join('\n');
  return names(before.turn.state) === names(after.turn.state) ? out : null;
}
