// The evidence filter interface, the embedded rule (rollout/qref/filter-rule.ts) worked by
// hand, and the precision/recall metrics against evidence ids.
import { describe, expect, it } from 'vitest';
import { analyze } from '../../../rollout/qref/analyzer.ts';
import { addCounts, checkKept, filterCounts, filterMetrics, NO_COUNTS } from '../../../rollout/qref/evidence-filter.ts';
import { needCoverage, RuleEvidenceFilter } from '../../../rollout/qref/filter-rule.ts';
import type { SearchHit } from '../../../rollout/qref/search.ts';

const hit = (id: string, title: string, text: string): SearchHit => ({ id, title, text, score: 1 });

// need = terms("Who designed the red bridge?") ∪ terms("red bridge engineer")
//      = {who, design, red, bridg} ∪ {red, bridg, engin} = {who, design, red, bridg, engin}: 5 terms
//   r0 "Red Bridge / The red bridge was designed by an engineer." -> {red, bridg, design, engin}: 4/5 = 0.8
//   r1 "Red wine / A red wine."                                   -> {red}:                      1/5 = 0.2
//   r2 "Old bridge / An old stone bridge."                        -> {bridg}:                    1/5 = 0.2
//   r3 "Engineers / Who trains bridge engineers?"                 -> {engin, who, bridg}:        3/5 = 0.6
const INPUT = {
  question: 'Who designed the red bridge?',
  trace: 'The red bridge stands in Kestwick and crosses the river; the old bridge and the wine cellar are elsewhere.',
  query: 'red bridge engineer',
  results: [
    hit('r0', 'Red Bridge', 'The red bridge was designed by an engineer.'),
    hit('r1', 'Red wine', 'A red wine.'),
    hit('r2', 'Old bridge', 'An old stone bridge.'),
    hit('r3', 'Engineers', 'Who trains bridge engineers?'),
  ],
};

describe('RuleEvidenceFilter', () => {
  it('computes the need coverage of the working', () => {
    expect(analyze(`${INPUT.question}\n${INPUT.query}`)).toEqual(['who', 'design', 'red', 'bridg', 'red', 'bridg', 'engin']);
    expect(needCoverage(INPUT)).toEqual([0.8, 0.2, 0.2, 0.6]);
  });

  it('keeps the results at or above minCoverage (the trace is not part of the need)', async () => {
    expect(await new RuleEvidenceFilter(0.45).filter(INPUT)).toEqual({ ok: true, kept: [0, 3] });
    expect(await new RuleEvidenceFilter(0.2).filter(INPUT)).toEqual({ ok: true, kept: [0, 1, 2, 3] });
    expect(await new RuleEvidenceFilter(0.8).filter(INPUT)).toEqual({ ok: true, kept: [0] });
    expect(await new RuleEvidenceFilter(0.81).filter(INPUT)).toEqual({ ok: true, kept: [] });
    expect(await new RuleEvidenceFilter(0.45).filter({ ...INPUT, results: [] })).toEqual({ ok: true, kept: [] });
  });

  it('a need of stop words only keeps nothing', async () => {
    expect(await new RuleEvidenceFilter(0).filter({ ...INPUT, question: 'the', query: 'of a' })).toEqual({ ok: true, kept: [] });
  });
});

describe('filter metrics', () => {
  it('one list: kept [0, 3] with r0 the evidence -> P 1/2, R 1/1, F1 2/3, keep rate 2/4', () => {
    const c = filterCounts(INPUT.results, [0, 3], new Set(['r0']));
    expect(c).toEqual({ retrieved: 4, kept: 2, evidenceRetrieved: 1, evidenceKept: 1 });
    const m = filterMetrics(c);
    expect(m.filter_precision).toBe(0.5);
    expect(m.filter_recall).toBe(1);
    expect(m.filter_f1).toBeCloseTo(2 / 3, 15);
    expect(m.filter_keep_rate).toBe(0.5);
  });

  it('pooled over lists by summing counts: + a list whose two evidence results were both dropped', () => {
    // list 2: results [e, x, e'] with e, e' evidence, kept [1] -> retrieved 3, kept 1, evidence 2, evidence kept 0
    const two = filterCounts([{ id: 'e' }, { id: 'x' }, { id: 'f' }], [1], new Set(['e', 'f']));
    const pooled = addCounts(addCounts(NO_COUNTS, filterCounts(INPUT.results, [0, 3], new Set(['r0']))), two);
    expect(pooled).toEqual({ retrieved: 7, kept: 3, evidenceRetrieved: 3, evidenceKept: 1 });
    // P = 1/3, R = 1/3, F1 = 1/3 (not the mean of the per-list values 1/2 and 0)
    const m = filterMetrics(pooled);
    expect(m.filter_precision).toBeCloseTo(1 / 3, 15);
    expect(m.filter_recall).toBeCloseTo(1 / 3, 15);
    expect(m.filter_f1).toBeCloseTo(1 / 3, 15);
  });

  it('undefined ratios are null, not 0 or NaN', () => {
    expect(filterMetrics(NO_COUNTS)).toEqual({ filter_precision: null, filter_recall: null, filter_f1: null, filter_keep_rate: null });
    expect(filterMetrics({ retrieved: 2, kept: 1, evidenceRetrieved: 1, evidenceKept: 0 })).toEqual({
      filter_precision: 0,
      filter_recall: 0,
      filter_f1: 0,
      filter_keep_rate: 0.5,
    });
  });
});

describe('checkKept (what an LLM filter reply must be)', () => {
  it('accepts unique integer indices in range, sorted', () => {
    expect(checkKept([3, 0, 2], 4)).toEqual({ ok: true, kept: [0, 2, 3] });
    expect(checkKept([], 0)).toEqual({ ok: true, kept: [] });
  });

  it.each([
    [[4], 4],
    [[-1], 4],
    [[1.5], 4],
    [['1'], 4],
    [[1, 1], 4],
    [[null], 4],
  ])('refuses %j for %i results', (kept, n) => {
    expect(checkKept(kept as unknown[], n)).toMatchObject({ ok: false, reason: 'bad_indices' });
  });
});
