// The throughput the endpoints allow with N episodes in flight and no orchestration cost
// (Little's law, N = X R), from the same time models the fleet's endpoints run:
//   an episode: T turns, T uniform in 1..maxTurns (E[T] = (maxTurns + 1) / 2); each turn one
//     policy completion of K tokens; between turns one simulator call (E[T] - 1 per episode);
//   the policy server (workers/synthetic/batching.ts): with b sequences decoding, a step
//     lasts a + c b ms (+ prefill), so a turn's K tokens take K (a + c b) ms; by Little's law
//     on the server, b = X E[T] K (a + c b) / 1000 below max_num_seqs; at max_num_seqs it
//     is full and X <= capacity / (E[T] K); prefill takes the share phi = X E[T] E[prompt] p / 1000
//     of its time, stretching every step by 1 / (1 - phi);
//   a simulator call (workers/synthetic/simulator-server.ts and endpoints/ retry rule): a
//     log-normal latency with mean median e^(sigma^2 / 2); a stall costs the client's timeout
//     and a backoff before the retry, a 429 its Retry-After, each followed by a fresh call:
//     E[call] = ((1 - s - q) E[lat] + s (timeout + backoff) + q retryAfter) / (1 - s - q).
// Then R = E[T] K step(b) / 1000 + (E[T] - 1) E[call] / 1000 and X = N / R, solved as a
// fixed point. Group deadlines, trainer time and the lag bound are not in it: the ideal
// keeps N episodes in flight at all times.
import type { BatchingOptions } from '../../workers/synthetic/batching.ts';
import type { SimulatorTiming } from '../../workers/synthetic/simulator-server.ts';

export interface EpisodeShape {
  maxTurns: number;
  tokensPerTurn: number;
  /** Mean prompt tokens of a turn (its prefill). */
  meanPromptTokens: number;
}

export interface ClientRetry {
  timeoutMs: number;
  /** The first retry's backoff (endpoints/ DEFAULT_RETRY_TIMING.baseDelayMs). */
  backoffMs: number;
}

export interface Ideal {
  episodesPerSecond: number;
  tokensPerSecond: number;
  /** Episode time R (s), its policy and simulator parts, and the server's mean batch. */
  episodeSeconds: number;
  policySeconds: number;
  simulatorSeconds: number;
  batch: number;
  /** What bounds it: the policy server's capacity, or the endpoints' latency at N in flight. */
  bound: 'policy capacity' | 'latency';
}

const Z99 = 2.3263;

/** Mean simulator call time (ms) with stalls and 429s retried by the client. */
export function meanSimulatorCallMs(t: SimulatorTiming, r: ClientRetry): number {
  const sigma = t.p99Ms > t.medianMs ? Math.log(t.p99Ms / t.medianMs) / Z99 : 0;
  const lat = t.medianMs * Math.exp((sigma * sigma) / 2);
  const s = t.stallShare;
  const q = t.share429;
  const stall = Math.min(t.stallMs, r.timeoutMs) + (t.stallMs > r.timeoutMs ? r.backoffMs : 0);
  return ((1 - s - q) * lat + s * stall + q * t.retryAfterS * 1000) / (1 - s - q);
}

export function idealThroughput(n: number, ep: EpisodeShape, b: BatchingOptions, sim: SimulatorTiming, retry: ClientRetry): Ideal {
  const turns = (ep.maxTurns + 1) / 2;
  const K = ep.tokensPerTurn;
  const simMs = (turns - 1) * meanSimulatorCallMs(sim, retry);
  let x = n / ((turns * K * b.stepMs + simMs) / 1000); // start: batch of 1, no prefill
  let batch = 1;
  for (let i = 0; i < 200; i++) {
    const phi = Math.min(0.99, (x * turns * ep.meanPromptTokens * b.prefillMsPerToken) / 1000);
    // Little's law on the server: batch = X E[T] K (a + c batch) / ((1 - phi) 1000), solved for batch.
    const k = (x * turns * K) / ((1 - phi) * 1000);
    const unbounded = k * b.stepMsPerSeq < 1 ? (k * b.stepMs) / (1 - k * b.stepMsPerSeq) : Infinity;
    batch = Math.min(b.maxNumSeqs, Math.max(1, unbounded));
    const stepMs = (b.stepMs + b.stepMsPerSeq * batch) / (1 - phi);
    const next = n / ((turns * K * stepMs + simMs) / 1000);
    x = 0.5 * x + 0.5 * next; // damped: converges where the two Little's laws agree
  }
  const phi = Math.min(0.99, (x * turns * ep.meanPromptTokens * b.prefillMsPerToken) / 1000);
  const cap = ((1 - phi) * b.maxNumSeqs * 1000) / (b.stepMs + b.stepMsPerSeq * b.maxNumSeqs) / (turns * K);
  const bound = x >= cap || batch >= b.maxNumSeqs ? 'policy capacity' : 'latency';
  const eps = Math.min(x, cap);
  const episodeSeconds = n / eps;
  return {
    episodesPerSecond: eps,
    tokensPerSecond: eps * turns * K,
    episodeSeconds,
    policySeconds: episodeSeconds - simMs / 1000,
    simulatorSeconds: simMs / 1000,
    batch,
    bound,
  };
}
