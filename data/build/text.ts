// Word-level text rules the embedded build steps share (data/build/README.md "Text rules").
// A content word is a lowercase run of letters/digits of length >= 3 that is not a stop word
// (function words, the verbs rubric items open with: "considers", "respects" ..., and words
// every rubric item and profile uses: "user", "current", "existing" ...). Its stem is Porter's
// (npm `stemmer`, a maintained implementation of Porter's algorithm): "allergy"/"allergies",
// "budget"/"budgets", "prefers"/"preference" meet, while "vision"/"visits" and
// "medical"/"medium" no longer do (the first four letters did). Two texts overlap when they
// share a stem.
import { stemmer } from 'stemmer';

const STOP = new Set(
  (
    'the and for with that this from into about their them they its are was were has have had not but can could would should will ' +
    'all any some such than then when where which who whom what how why own user users person people whether your you also more most ' +
    'very other one ones each both via per e.g etc ' +
    'account accounts considers consider consideration respects respect matches match fits fit reflects reflect builds build suggests suggest ' +
    'keeps keep uses use covers cover presents present cites cite includes include recommends recommend recommendation recommendations ' +
    'gives give giving provides provide addresses address takes take makes make being such options option ' +
    // words every rubric item and profile line uses: they name no factor
    'report reports should current currently existing main specific particular relevant related appropriate ' +
    'needs need needed based whose into within toward towards around they them their there these those ' +
    'aligns align tailors tailor adapts adapt prioritizes prioritize explains explain mentions mention discusses discuss ' +
    'ensures ensure focuses focus suits suit takes taken account accounts ' +
    // generic nouns that name no factor by themselves ("the type of the building")
    'type types kind kinds level levels amount amounts way ways aspect aspects factor factors detail details ' +
    'information situation situations status arrangement arrangements thing things'
  ).split(/\s+/),
);

/** Content words of `text`, in order, lowercase. */
export function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 3 && !STOP.has(w));
}

/**
 * Runs of adjacent content words of `text` (a stop word or punctuation ends a run): the noun
 * phrases a rubric item is made of, e.g. "travel budget", "income stability". [runs][words].
 */
export function contentRuns(text: string): string[][] {
  const runs: string[][] = [];
  for (const piece of text.toLowerCase().split(/[^\p{L}\p{N}\s]+/u)) {
    let run: string[] = [];
    for (const w of piece.match(/[\p{L}\p{N}]+/gu) ?? []) {
      if (w.length >= 3 && !STOP.has(w)) run.push(w);
      else if (run.length) runs.push(run), (run = []);
    }
    if (run.length) runs.push(run);
  }
  return runs;
}

/** The Porter stem of one content word (numbers stay as they are). */
export const stemOf = (w: string): string => (/\d/.test(w) ? w : stemmer(w));

/** The distinct Porter stems of the content words of `text`. */
export function stems(text: string): Set<string> {
  return new Set(contentWords(text).map(stemOf));
}

export function shared(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let n = 0;
  for (const x of a) if (b.has(x)) n++;
  return n;
}

/** |A ∩ B| / |A ∪ B| (0 for two empty sets). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  const inter = shared(a, b);
  const union = a.size + b.size - inter;
  return union === 0 ? 0 : inter / union;
}

/** Lowercase, whitespace collapsed, punctuation at the ends trimmed: for substring leak checks. */
export function normalized(text: string): string {
  return text
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[\s.,;:!?"']+|[\s.,;:!?"']+$/g, '');
}

export const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** `snake_case` of the first `n` content words ("slot" when there are none). */
export function snakeName(text: string, n = 3): string {
  const words = contentWords(text)
    .slice(0, n)
    .map((w) => w.normalize('NFD').replace(/[^a-z0-9]/g, ''))
    .filter(Boolean);
  return words.length ? words.join('_') : 'slot';
}

/** `name`, or `name_2`, `name_3` ... whichever is not in `taken`; adds it. */
export function uniqueName(name: string, taken: Set<string>): string {
  let out = name;
  for (let k = 2; taken.has(out); k++) out = `${name}_${k}`;
  taken.add(out);
  return out;
}
