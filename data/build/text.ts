// Word-level text rules the embedded build steps share (data/build/README.md "Text rules").
// A content word is a lowercase run of letters/digits of length >= 3 that is not a stop word
// (function words plus the verbs rubric items open with: "considers", "respects" ...). Its
// stem is its first four characters, so "diet"/"dietary", "allergy"/"allergies",
// "budget"/"budgets" meet; two texts overlap when they share a stem.

const STOP = new Set(
  ('the and for with that this from into about their them they its are was were has have had not but can could would should will ' +
    'all any some such than then when where which who whom what how why own user users person people whether your you also more most ' +
    'very other one ones each both via per e.g etc ' +
    'account accounts considers consider consideration respects respect matches match fits fit reflects reflect builds build suggests suggest ' +
    'keeps keep uses use covers cover presents present cites cite includes include recommends recommend recommendation recommendations ' +
    'gives give giving provides provide addresses address takes take makes make being such options option').split(/\s+/),
);

/** Content words of `text`, in order, lowercase. */
export function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 3 && !STOP.has(w));
}

/** The distinct stems (first four characters) of the content words of `text`. */
export function stems(text: string): Set<string> {
  return new Set(contentWords(text).map((w) => w.slice(0, 4)));
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
  return text.toLowerCase().replace(/\s+/g, ' ').trim().replace(/^[\s.,;:!?"']+|[\s.,;:!?"']+$/g, '');
}

export const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** `snake_case` of the first `n` content words ("slot" when there are none). */
export function snakeName(text: string, n = 3): string {
  const words = contentWords(text).slice(0, n).map((w) => w.normalize('NFD').replace(/[^a-z0-9]/g, '')).filter(Boolean);
  return words.length ? words.join('_') : 'slot';
}

/** `name`, or `name_2`, `name_3` ... whichever is not in `taken`; adds it. */
export function uniqueName(name: string, taken: Set<string>): string {
  let out = name;
  for (let k = 2; taken.has(out); k++) out = `${name}_${k}`;
  taken.add(out);
  return out;
}
