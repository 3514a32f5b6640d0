// The retrieval-grounded reward (rollout/qref/reward.ts), worked by hand, plus the properties
// the formula promises: copying the batch earns 0, and an extra query that finds nothing
// new costs exactly queryCost.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { qrefReward } from '../../../rollout/qref/reward.ts';

const P = { queryCost: 0.1, invalidPenalty: 1.0 };

describe('qrefReward, worked by hand', () => {
  // E = {e1, e2}.
  // Original (2 queries): [x1, e1, x2], [x1, x3] -> U = {x1, e1, x2, x3}: 1 of 2 evidence, recall 0.5, precision 1/4.
  const original = [
    ['x1', 'e1', 'x2'],
    ['x1', 'x3'],
  ];

  it('more evidence with one extra query: R = (1.0 - 0.5) - 0.1 * 1 = 0.4', () => {
    // Refined (3 queries): [e1, x4], [e2, x1], [e1] -> U = {e1, x4, e2, x1}: 2 of 2, recall 1.0, precision 2/4.
    const r = qrefReward({ evidenceIds: ['e1', 'e2'], original, refined: [['e1', 'x4'], ['e2', 'x1'], ['e1']] }, P);
    expect(r).toEqual({
      reward: 0.4,
      recall_refined: 1,
      recall_original: 0.5,
      recall_gain: 0.5,
      queries_refined: 3,
      queries_original: 2,
      extra_queries: 1,
      query_cost: 0.1,
      invalid: 0,
      invalid_penalty: 0,
      evidence_found_refined: 2,
      evidence_found_original: 1,
      retrieved_refined: 4,
      retrieved_original: 4,
      precision_refined: 0.5,
      precision_original: 0.25,
      failed_searches_refined: 0,
      failed_searches_original: 0,
    });
  });

  it('fewer queries cost nothing but lose what they miss: R = 0 - 0.5 = -0.5', () => {
    const r = qrefReward({ evidenceIds: ['e1', 'e2'], original, refined: [['x9']] }, P);
    expect(r).toMatchObject({ reward: -0.5, recall_refined: 0, recall_gain: -0.5, extra_queries: 0, query_cost: 0, precision_refined: 0 });
  });

  it('a failed search retrieves nothing and is counted: [failed], [e2] -> recall 0.5, R = 0', () => {
    const r = qrefReward({ evidenceIds: ['e1', 'e2'], original, refined: [null, ['e2']] }, P);
    expect(r).toMatchObject({ reward: 0, recall_refined: 0.5, failed_searches_refined: 1, retrieved_refined: 1, precision_refined: 1 });
    const allFailed = qrefReward({ evidenceIds: ['e1', 'e2'], original: [null, null], refined: [['e1']] }, P);
    expect(allFailed).toMatchObject({ recall_original: 0, failed_searches_original: 2, retrieved_original: 0, precision_original: 0, reward: 0.5 });
  });

  it('an invalid turn: R = -invalidPenalty, the original batch still reported', () => {
    const r = qrefReward({ evidenceIds: ['e1', 'e2'], original, refined: null }, { queryCost: 0.1, invalidPenalty: 0.7 });
    expect(r).toMatchObject({ reward: -0.7, invalid: 1, invalid_penalty: 0.7, recall_original: 0.5, queries_refined: 0, recall_refined: 0 });
  });

  it('one evidence document of three found by three extra queries: R = 1/3 - 0.3', () => {
    const r = qrefReward({ evidenceIds: ['a', 'b', 'c'], original: [['z']], refined: [['a'], ['y'], ['a', 'y'], ['w']] }, P);
    expect(r.recall_refined).toBeCloseTo(1 / 3, 15);
    expect(r.extra_queries).toBe(3);
    expect(r.reward).toBeCloseTo(1 / 3 - 0.3, 15);
  });
});

const ids = fc.array(fc.constantFrom('e1', 'e2', 'e3', 'x1', 'x2', 'x3', 'x4'), { maxLength: 5 });
const batch = fc.array(fc.option(ids, { freq: 6 }), { minLength: 1, maxLength: 5 });
const evidence = fc.uniqueArray(fc.constantFrom('e1', 'e2', 'e3', 'x1'), { minLength: 1, maxLength: 3 });

describe('qrefReward, properties', () => {
  it('copying the original batch earns exactly 0', () => {
    fc.assert(
      fc.property(evidence, batch, (e, b) => {
        expect(qrefReward({ evidenceIds: e, original: b, refined: b }, P).reward).toBe(0);
      }),
    );
  });

  it('an extra query that retrieves nothing new lowers the reward by exactly queryCost (once the batch is as long as the original)', () => {
    fc.assert(
      fc.property(evidence, batch, batch, (e, orig, ref) => {
        fc.pre(ref.length >= orig.length);
        const before = qrefReward({ evidenceIds: e, original: orig, refined: ref }, P);
        const seen = [...new Set(ref.flatMap((l) => l ?? []))];
        const after = qrefReward({ evidenceIds: e, original: orig, refined: [...ref, seen] }, P);
        expect(after.reward).toBeCloseTo(before.reward - P.queryCost, 12);
        expect(after.recall_refined).toBe(before.recall_refined);
      }),
    );
  });

  it('the reward stays within [-1 - queryCost * extra, 1] and equals gain - cost', () => {
    fc.assert(
      fc.property(evidence, batch, batch, (e, orig, ref) => {
        const r = qrefReward({ evidenceIds: e, original: orig, refined: ref }, P);
        expect(r.reward).toBeCloseTo(r.recall_gain - r.query_cost, 12);
        expect(r.reward).toBeLessThanOrEqual(1);
        expect(r.reward).toBeGreaterThanOrEqual(-1 - P.queryCost * r.extra_queries - 1e-12);
      }),
    );
  });
});
