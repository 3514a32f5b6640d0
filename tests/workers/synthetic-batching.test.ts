// workers/synthetic/batching.ts: the continuous-batching time model, step by step on a fake
// clock: admission up to max_num_seqs, step time a + c x running, one token per running
// sequence per step, first come first served.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchScheduler, capacity, decodeRate } from '../../workers/synthetic/batching.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('continuous batching model', () => {
  it('decodes one token per running sequence per step and admits the waiting as seats free', async () => {
    vi.useFakeTimers();
    const o = { maxNumSeqs: 2, maxPrefillTokens: 1000, stepMs: 10, stepMsPerSeq: 5, prefillMsPerToken: 0 };
    const s = new BatchScheduler(o, () => Date.now());
    const t0 = Date.now();
    const done: Record<string, number> = {};
    const req = (name: string, tokens: number) => void s.submit(4, tokens).then(() => (done[name] = Date.now() - t0));
    req('a', 2);
    req('b', 3);
    req('c', 1); // waits: two seats
    await vi.runAllTimersAsync();
    // The first step starts with a alone (b and c arrive during it, as between vLLM's scheduler steps):
    // [a] 15 ms; [a, b] 20 ms -> a done at 35; [b, c] 20 ms -> c done at 55; [b] 15 ms -> b done at 70.
    expect(done).toEqual({ a: 35, c: 55, b: 70 });
    // b waited 15 ms, c 35 ms for a seat; batches 1 + 2 + 2 + 1.
    expect(s.stats).toMatchObject({ requests: 3, tokens: 6, steps: 4, batchSum: 6, busyMs: 70, queueMs: 50 });
  });

  it('capacity is max_num_seqs tokens per step at a full batch', () => {
    const o = { maxNumSeqs: 100, maxPrefillTokens: 1000, stepMs: 10, stepMsPerSeq: 0.1, prefillMsPerToken: 0 };
    expect(decodeRate(o, 1)).toBeCloseTo(1000 / 10.1, 9);
    expect(capacity(o)).toBeCloseTo((100 * 1000) / 20, 9); // 5,000 tokens/s
  });
});
