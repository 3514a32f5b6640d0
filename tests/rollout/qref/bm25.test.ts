// The embedded BM25 backend (rollout/qref/bm25.ts) against a ranking worked by hand on a
// five-document corpus, with MiniSearch's IDF and length definitions (stated in bm25.ts).
import { describe, expect, it } from 'vitest';
import type { CorpusDoc } from '../../../data/qref/schema.ts';
import { analyze } from '../../../rollout/qref/analyzer.ts';
import { Bm25Search } from '../../../rollout/qref/bm25.ts';

const TOY: CorpusDoc[] = [
  { id: 'd1', title: 'Red apple', text: 'A red apple pie.' },
  { id: 'd2', title: 'Apple orchard', text: 'An orchard of green apple trees and pear trees.' },
  { id: 'd3', title: 'Red wine', text: 'Red wine from red grapes.' },
  { id: 'd4', title: 'Pear tart', text: 'A pear tart with cream.' },
  { id: 'd5', title: 'Cider', text: 'Cider is pressed from apples.' },
];

// Step 1, the terms (title + "\n" + text through analyze: stop words a/an/of/and/with/is out,
// Porter stems; "from" is not a Lucene stop word):
//   d1 red appl red appl pie                        distinct 3   tf(red)=2 tf(appl)=2
//   d2 appl orchard orchard green appl tree pear tree   distinct 5   tf(appl)=2
//   d3 red wine red wine from red grape             distinct 4   tf(red)=3
//   d4 pear tart pear tart cream                    distinct 3
//   d5 cider cider press from appl                  distinct 4   tf(appl)=1
// |D| counts distinct terms (MiniSearch): avgdl = (3 + 5 + 4 + 3 + 4) / 5 = 3.8.
// Step 2, query "red apple" -> [red, appl]; N = 5, n(red) = 2, n(appl) = 3:
//   idf(red)  = ln(1 + (5 - 2 + 0.5) / (2 + 0.5)) = ln 2.4       = 0.8754687
//   idf(appl) = ln(1 + (5 - 3 + 0.5) / (3 + 0.5)) = ln 1.7142857 = 0.5389965
// Step 3, tf part tf (k1 + 1) / (tf + k1 (1 - b + b |D| / avgdl)) with k1 = 1.2, b = 0.75:
//   |D| = 3: k1 (0.25 + 0.75 * 3/3.8) = 1.0105263;  tf 2 -> 4.4 / 3.0105263 = 1.4615385
//   |D| = 4: k1 (0.25 + 0.75 * 4/3.8) = 1.2473684;  tf 3 -> 6.6 / 4.2473684 = 1.5539033; tf 1 -> 2.2 / 2.2473684 = 0.9789227
//   |D| = 5: k1 (0.25 + 0.75 * 5/3.8) = 1.4842105;  tf 2 -> 4.4 / 3.4842105 = 1.2628399
// Step 4, sums (d4 matches nothing):
//   d1 = 1.4615385 * (0.8754687 + 0.5389965) = 2.0672953
//   d3 = 1.5539033 * 0.8754687               = 1.3603938
//   d2 = 1.2628399 * 0.5389965               = 0.6806663
//   d5 = 0.9789227 * 0.5389965               = 0.5276359
const ln = Math.log;
const IDF_RED = ln(2.4);
const IDF_APPL = ln(1 + 2.5 / 3.5);
const tfPart = (tf: number, len: number, k1 = 1.2, b = 0.75) => (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * len) / 3.8));

describe('Bm25Search on a hand-worked corpus', () => {
  const index = new Bm25Search(TOY);

  it('analyzes the documents into the terms of the working', () => {
    expect(analyze('Red apple\nA red apple pie.')).toEqual(['red', 'appl', 'red', 'appl', 'pie']);
    expect(analyze('Red wine\nRed wine from red grapes.')).toEqual(['red', 'wine', 'red', 'wine', 'from', 'red', 'grape']);
    expect(analyze('Cider\nCider is pressed from apples.')).toEqual(['cider', 'cider', 'press', 'from', 'appl']);
  });

  it('ranks d1 > d3 > d2 > d5 with the hand-worked scores', async () => {
    const r = await index.search('red apple', 10);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.hits.map((h) => h.id)).toEqual(['d1', 'd3', 'd2', 'd5']);
    const expected = [tfPart(2, 3) * (IDF_RED + IDF_APPL), tfPart(3, 4) * IDF_RED, tfPart(2, 5) * IDF_APPL, tfPart(1, 4) * IDF_APPL];
    r.hits.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i]!, 10));
    expect(r.hits.map((h) => +h.score.toFixed(7))).toEqual([2.0672953, 1.3603938, 0.6806663, 0.5276359]);
    expect(r.hits[0]).toMatchObject({ title: 'Red apple', text: 'A red apple pie.' });
  });

  it('cuts at topK and returns nothing for a query of stop words or unknown terms', async () => {
    const top2 = await index.search('red apple', 2);
    expect(top2.ok && top2.hits.map((h) => h.id)).toEqual(['d1', 'd3']);
    expect(await index.search('the of and', 5)).toEqual({ ok: true, hits: [] });
    expect(await index.search('zeppelin', 5)).toEqual({ ok: true, hits: [] });
  });

  it('delta > 0 is BM25+: each matching term adds idf * delta', async () => {
    const plus = new Bm25Search(TOY, { k1: 1.2, b: 0.75, delta: 0.5 });
    const r = await plus.search('apples', 10); // -> appl: d1, d2, d5
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const d5 = r.hits.find((h) => h.id === 'd5');
    expect(d5?.score).toBeCloseTo(IDF_APPL * (0.5 + tfPart(1, 4)), 10); // 0.7971342
  });

  it('other k1 and b reach the score: k1 = 2, b = 0 (no length normalisation)', async () => {
    const flat = new Bm25Search(TOY, { k1: 2, b: 0, delta: 0 });
    const r = await flat.search('red', 10);
    expect(r.ok && r.hits.map((h) => h.id)).toEqual(['d3', 'd1']);
    if (!r.ok) return;
    expect(r.hits[0]!.score).toBeCloseTo(IDF_RED * ((3 * 3) / (3 + 2)), 10); // tf 3, norm 2
    expect(r.hits[1]!.score).toBeCloseTo(IDF_RED * ((2 * 3) / (2 + 2)), 10);
  });

  it('ties keep corpus order', async () => {
    const twins = new Bm25Search([
      { id: 'b', title: 'Lamp', text: 'oil lamp' },
      { id: 'a', title: 'Lamp', text: 'oil lamp' },
      { id: 'c', title: 'Other', text: 'nothing here' },
    ]);
    const r = await twins.search('lamp', 5);
    expect(r.ok && r.hits.map((h) => h.id)).toEqual(['b', 'a']);
  });
});
