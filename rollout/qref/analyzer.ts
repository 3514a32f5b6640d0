// The text analysis of the embedded BM25 index and of the rule evidence filter: one function,
// so a query and a document are cut into the same terms. It follows the analysis
// Anserini/Pyserini run by default (Lucene's EnglishAnalyzer), the usual BM25 baseline:
//   1. NFKC, lower case;
//   2. tokens = runs of letters/digits; a decimal or grouped number stays one token
//      ("2.0", "1.62", "14,200", "O.4"); everything else separates ("Kade-Orrin" -> kade, orrin);
//   3. the possessive 's is dropped (Lucene's EnglishPossessiveFilter);
//   4. Lucene's 33 English stop words are removed (ENGLISH_STOP_WORDS_SET);
//   5. Porter stemming (npm `stemmer`, a maintained implementation of Porter's algorithm) of
//      tokens without digits.
import { stemmer } from 'stemmer';

/** Lucene's EnglishAnalyzer stop set (org.apache.lucene.analysis.en.EnglishAnalyzer.ENGLISH_STOP_WORDS_SET). */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

// A token: letters/digits, then optional ".digits" or ",digits" groups (so "1784." ends at 4).
const TOKEN = /[\p{L}\p{N}]+(?:[.,]\p{N}+)*/gu;
const POSSESSIVE = /['\u2019]s(?![\p{L}\p{N}])/gu;
const HAS_DIGIT = /\p{N}/u;

/** The terms of `text`, in order, repeats kept ([n] strings). */
export function analyze(text: string): string[] {
  const tokens = text.normalize('NFKC').toLowerCase().replace(POSSESSIVE, '').match(TOKEN) ?? [];
  const out: string[] = [];
  for (const t of tokens) {
    if (ENGLISH_STOP_WORDS.has(t)) continue;
    out.push(HAS_DIGIT.test(t) ? t : stemmer(t));
  }
  return out;
}

/** The distinct terms of `text`. */
export function termSet(text: string): Set<string> {
  return new Set(analyze(text));
}
