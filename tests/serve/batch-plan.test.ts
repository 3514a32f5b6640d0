// The pure plan of a batched step (serve/batch-plan.ts), on cases worked by hand: decoders
// first at one position each, prefill blocks in admission order within the token budget (at
// least one block per step), leading cache hits taken without budget, a whole cached prompt
// with its logits needing no forward pass, a block computed by another sequence in the same
// step left for the next one. And it is pure: inputs and cache use order unchanged.
import { describe, expect, it } from 'vitest';
import { planStep, type PlanInput } from '../../serve/batch-plan.ts';
import type { CacheEntry } from '../../serve/prefix-cache.ts';

const entry = (key: string, logits: Float32Array | null = null): CacheEntry => ({
  key,
  parent: null,
  block: { length: 8 } as unknown as CacheEntry['block'],
  logits,
  children: 0,
});
const job = (name: string, over: Partial<PlanInput<string>> = {}): PlanInput<string> => ({
  job: name,
  phase: 'prefill',
  fed: 0,
  promptLength: 20,
  keys: null,
  ...over,
});
const summary = (plan: ReturnType<typeof planStep<string>>) =>
  plan.map((p) => [p.job, p.phase, p.hits.map((h) => h.key), p.blocks, p.cachedLogits ? 'logits' : null]);

describe('planStep', () => {
  it('decoders first (1 position each), then prompt blocks in order within the budget', () => {
    // budget 24: 2 decoders -> 22 left; A: blocks of 8, 8, 4 (20) -> 2 left; B: its first block (8) does not fit.
    const jobs = [job('A'), job('D1', { phase: 'decode' }), job('B'), job('D2', { phase: 'decode' })];
    const plan = planStep(jobs, { blockSize: 8, maxBatchedTokens: 24, peek: null });
    expect(summary(plan)).toEqual([
      ['D1', 'decode', [], [], null],
      ['D2', 'decode', [], [], null],
      ['A', 'prefill', [], [0, 1, 2], null],
    ]);
  });

  it('always runs at least one block, even over the budget; continues from fed', () => {
    const plan = planStep([job('A', { fed: 8 }), job('B')], { blockSize: 8, maxBatchedTokens: 4, peek: null });
    expect(summary(plan)).toEqual([['A', 'prefill', [], [1], null]]);
  });

  it('takes leading cache hits without budget; a whole cached prompt with logits needs no forward pass; shared in-flight blocks wait', () => {
    const cache = new Map<string, CacheEntry>([
      ['a0', entry('a0')],
      ['a1', entry('a1')],
      ['b0', entry('b0')],
      ['b1', entry('b1')],
      ['b2', entry('b2', Float32Array.of(1, 2))],
    ]);
    const peeked: string[] = [];
    const peek = (k: string) => (peeked.push(k), cache.get(k));
    const jobs = [
      job('A', { keys: ['a0', 'a1', 'a2'] }), // hits a0, a1; computes a2 (positions 16-20: 4) -> 10 left
      job('B', { keys: ['b0', 'b1', 'b2'] }), // all cached, with logits: no blocks
      job('F', { keys: ['a0', 'a1', 'a2'] }), // hits a0, a1; a2 is computed by A in this step: waits
      job('C', { keys: ['a0', 'x1', 'a2'] }), // hit a0, computes x1 (8) -> 2 left; a2 in flight: stops
      job('E', { keys: ['e0', 'e1', 'e2'] }), // e0 (8) > 2 left and a block is planned: nothing
    ];
    const before = JSON.stringify(jobs);
    const plan = planStep(jobs, { blockSize: 8, maxBatchedTokens: 14, peek });
    expect(summary(plan)).toEqual([
      ['A', 'prefill', ['a0', 'a1'], [2], null],
      ['B', 'prefill', ['b0', 'b1', 'b2'], [], 'logits'],
      ['F', 'prefill', ['a0', 'a1'], [], null],
      ['C', 'prefill', ['a0'], [1], null],
    ]);
    expect(JSON.stringify(jobs)).toBe(before); // inputs untouched
    expect(peeked).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'b2', 'a0', 'a1', 'a2', 'a0', 'x1', 'e0']); // only peeks, in order
  });

  it('a cached last block without logits is computed again (its logits are needed)', () => {
    const cache = new Map<string, CacheEntry>([
      ['k0', entry('k0')],
      ['k1', entry('k1')],
      ['k2', entry('k2')],
    ]);
    const plan = planStep([job('A', { keys: ['k0', 'k1', 'k2'] })], { blockSize: 8, maxBatchedTokens: 64, peek: (k) => cache.get(k) });
    expect(summary(plan)).toEqual([['A', 'prefill', ['k0', 'k1'], [2], null]]);
  });
});
