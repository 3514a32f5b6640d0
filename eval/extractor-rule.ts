// The embedded factor extractor (method §8; the LLM one is extractor-llm.ts). Deterministic,
// no model: a refined query q* is a restatement of the original request plus the
// user-specific constraints the policy gathered, so
//   1. split q* into sentences (. ! ? ; and line breaks followed by space or end),
//   2. split each sentence into clauses at commas (not "3,000"; a comma part of one or two
//      capitalized words, "Columbus, Ohio", stays joined), colons, parentheses and dashes, and
//      before clause-opening words that usually introduce a constraint (CLAUSE_OPENERS:
//      relative pronouns, subordinators, and prepositions such as "for", "with", "under"),
//   3. drop the generic restatement: a clause whose content words (STOPWORDS and generic
//      request verbs removed, a final plural "s" cut) are at least half contained in the
//      original query's content words, and a clause with no content word at all,
//   4. keep the rest, trimmed and de-duplicated (case-insensitive), in order.
// Limits, by design of a rule: no synonyms, no coreference; "and" is not a split point
// (it joins values: "the UK and the US"); an abbreviation such as "e.g." ends a sentence.
import { words } from '../encoders/hashed.ts';
import type { FactorExtractor } from './extractor.ts';

const CLAUSE_OPENERS = [
  'who',
  'whose',
  'which',
  'that',
  'where',
  'because',
  'since',
  'while',
  'although',
  'though',
  'but',
  'given',
  'considering',
  'with',
  'without',
  'within',
  'under',
  'over',
  'below',
  'above',
  'for',
  'avoiding',
  'excluding',
  'including',
  'except',
  'preferably',
  'ideally',
  'using',
];

/** Function words and generic request verbs: they never make a clause user-specific. */
const STOPWORDS = new Set(
  (
    'a an the and or but nor so of to in on at by from into onto about as than then this these those ' +
    'i me my mine we our you your he she it its they them their his her who whom whose which that what ' +
    'is are was were be been being am do does did have has had will would can could should shall may might must ' +
    'not no yes very more most some any all each every other such own same just also only too there here ' +
    'how when where why if while with without within for under over up down out off again ' +
    'please research find recommend suggest compare identify provide give list explain summarize summarise ' +
    'look looking want need help know tell make get include covering cover consider focus focusing best good options option'
  ).split(' '),
);

const stem = (w: string) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w);

/** Content words of a text, lowercased and stemmed (words() is the hashed encoder's tokenizer). */
export function contentWords(text: string): string[] {
  return words(text)
    .filter((w) => !STOPWORDS.has(w))
    .map(stem);
}

export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

const OPENER_SPLIT = new RegExp(`\\s+(?=(?:${CLAUSE_OPENERS.join('|')})\\b)`, 'i');
const LEADING_JOINER = /^(?:and|or|so|also|as well as|plus)(?:\s+|$)/i;

/** "Columbus, Ohio": a comma part of only capitalized words continues the previous part. */
const PLACE_TAIL = /^\s*(?:\p{Lu}[\p{L}.'-]*\s*){1,2}$/u;

function commaParts(sentence: string): string[] {
  // A comma inside a number ("$3,000") is not a boundary. The capture keeps the separators:
  // pieces = [part, sep, part, sep, ...].
  const pieces = sentence.split(/(,(?!\d{3}\b)|[:()[\]]|\s[-–—]\s)/);
  const out: string[] = [];
  for (let k = 0; k < pieces.length; k += 2) {
    const part = pieces[k] as string;
    if (out.length && pieces[k - 1] === ',' && PLACE_TAIL.test(part)) out[out.length - 1] += `,${part}`;
    else out.push(part);
  }
  return out;
}

export function clauses(sentence: string): string[] {
  return commaParts(sentence)
    .flatMap((part) => part.split(OPENER_SPLIT))
    .map((c) =>
      c
        .replace(/[\s.!?;]+$/, '')
        .replace(LEADING_JOINER, '')
        .trim(),
    )
    .filter(Boolean);
}

/** True when the clause mostly restates the original query (or says nothing). */
export function isRestatement(clause: string, queryWords: ReadonlySet<string>): boolean {
  const cw = contentWords(clause);
  if (cw.length === 0) return true;
  return cw.filter((w) => queryWords.has(w)).length / cw.length >= 0.5;
}

export function ruleFactors(refinedQuery: string, originalQuery: string): string[] {
  const queryWords = new Set(contentWords(originalQuery));
  const seen = new Set<string>();
  const out: string[] = [];
  for (const c of sentences(refinedQuery).flatMap(clauses)) {
    const key = c.toLowerCase();
    if (isRestatement(c, queryWords) || seen.has(key)) continue;
    seen.add(key);
    out.push(c);
  }
  return out;
}

export class RuleFactorExtractor implements FactorExtractor {
  readonly name = 'rule';
  async extract(refinedQuery: string, instance: { query: string }): Promise<string[]> {
    return ruleFactors(refinedQuery, instance.query);
  }
}
