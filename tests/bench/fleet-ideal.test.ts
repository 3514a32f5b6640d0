// bench/fleet/ideal.ts: the throughput the endpoints allow (Little's law), on cases worked by
// hand: a latency-bound and a capacity-bound policy server, and the mean simulator call with
// stalls and 429s retried.
import { describe, expect, it } from 'vitest';
import { idealThroughput, meanSimulatorCallMs } from '../../bench/fleet/ideal.ts';

const noSim = { medianMs: 1000, p99Ms: 1000, stallShare: 0, stallMs: 0, share429: 0, retryAfterS: 1 };
const retry = { timeoutMs: 2000, backoffMs: 500 };

describe('fleet ideal', () => {
  it('one-turn episodes on a server whose step does not grow with the batch: X = N / R until the capacity', () => {
    // 100 tokens x 10 ms = 1 s per episode; 10 in flight -> 10 episodes/s; capacity 50 seqs x 100 tok/s / 100 tok = 50/s
    const b = { maxNumSeqs: 50, maxPrefillTokens: 1e9, stepMs: 10, stepMsPerSeq: 0, prefillMsPerToken: 0 };
    const ep = { maxTurns: 1, tokensPerTurn: 100, meanPromptTokens: 0 };
    const x = idealThroughput(10, ep, b, noSim, retry);
    expect(x.episodesPerSecond).toBeCloseTo(10, 6);
    expect(x.episodeSeconds).toBeCloseTo(1, 6);
    expect(x.batch).toBeCloseTo(10, 4); // Little's law on the server: 10/s x 1 s
    expect(x.bound).toBe('latency');
    // 100 in flight would need a batch of 100 > 50: the server's capacity bounds it at 50 episodes/s.
    const y = idealThroughput(100, ep, b, noSim, retry);
    expect(y.episodesPerSecond).toBeCloseTo(50, 6);
    expect(y.bound).toBe('policy capacity');
  });

  it('a step that grows with the batch: b = X K (a + c b) / 1000 and X = N / R agree', () => {
    // a = 10, c = 0.1, K = 100, N = 20: R = (10 + 0.1 b) / 10 s and b = N (all decoding) -> R = 1.2 s, X = 16.67/s
    const b = { maxNumSeqs: 1000, maxPrefillTokens: 1e9, stepMs: 10, stepMsPerSeq: 0.1, prefillMsPerToken: 0 };
    const x = idealThroughput(20, { maxTurns: 1, tokensPerTurn: 100, meanPromptTokens: 0 }, b, noSim, retry);
    expect(x.batch).toBeCloseTo(20, 3);
    expect(x.episodesPerSecond).toBeCloseTo(20 / 1.2, 3);
  });

  it('a simulator call: mean latency, stalls cost the timeout and a backoff, 429s their Retry-After, each then called again', () => {
    // (0.8 x 1000 + 0.1 x (2000 + 500) + 0.1 x 1000) / 0.8 = 1437.5 ms
    expect(meanSimulatorCallMs({ medianMs: 1000, p99Ms: 1000, stallShare: 0.1, stallMs: 5000, share429: 0.1, retryAfterS: 1 }, retry)).toBeCloseTo(1437.5, 6);
    // log-normal: median 1000, p99 = 1000 e^(2.3263 sigma) with sigma = 0.5 -> mean 1000 e^(0.125)
    expect(meanSimulatorCallMs({ ...noSim, p99Ms: 1000 * Math.exp(2.3263 * 0.5) }, retry)).toBeCloseTo(1000 * Math.exp(0.125), 6);
  });
});
