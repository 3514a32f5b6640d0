// One row of the fleet table from a leg: over the steady window (first update trained ->
// last episode started, so the pipeline was primed and the rollout slots had work waiting) the episodes/s
// and tokens/s against the ideal (ideal.ts), the mean episodes in flight, the CPU each part
// spent per episode, Redis memory and commands/s, queue waits, the policy server's batch
// and busy share, and what bounds the leg.
import type { BatchingOptions } from '../../workers/synthetic/batching.ts';
import type { Ideal } from './ideal.ts';
import type { LegResult, Sample } from './leg.ts';

export interface Row {
  inFlight: number;
  meanInFlight: number;
  windowS: number;
  episodes: number;
  eps: number;
  tokensPerS: number;
  ideal: Ideal;
  /** The ideal at the measured mean in flight: splits the ratio into occupancy and per-episode cost. */
  idealAtMean: Ideal;
  cpuMsPerEpisode: Record<string, number>;
  orchestratorCpuMsPerEpisode: number;
  cpuCoresUsed: number;
  redisMemoryMB: number;
  redisOpsPerS: number;
  /** Redis commands per episode, the most called first. */
  redisPerEpisode: [string, number][];
  waits: Record<'rollouts' | 'groups' | 'updates', { p50: number; p95: number }>;
  policyBatch: number;
  policyBusy: number;
  policyQueueMs: number;
  groupsLate: number;
  groupsDropped: number;
  bound: string;
  /** The machine's 1-minute load average over the window (other agents' work included). */
  load: number;
}

/** The processes that are the orchestrator (what gsteer itself costs per episode). */
export const ORCHESTRATOR = ['controller', 'rollout workers', 'group', 'trainer', 'redis'];

const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/** The sample nearest to time t. */
const near = (samples: Sample[], t: number) => samples.reduce((best, s) => (Math.abs(s.t - t) < Math.abs(best.t - t) ? s : best), samples[0]!);

export function legRow(n: number, leg: LegResult, tokensPerEpisode: number, idealOf: (n: number) => Ideal, batching: BatchingOptions, cores: number): Row {
  const w = leg.watch;
  let t0 = w.firstUpdateDone();
  let t1 = w.lastStarted();
  if (!Number.isFinite(t0) || t1 - t0 < 5000) [t0, t1] = [leg.samples[0]!.t, leg.samples.at(-1)!.t]; // too short a run for a steady window
  const windowS = (t1 - t0) / 1000;
  const episodes = w.finishedIn(t0, t1);
  const eps = episodes / windowS;
  const meanInFlight = w.meanInFlight(t0, t1);
  const [a, b] = [near(leg.samples, t0), near(leg.samples, t1)];
  const dt = (b.t - a.t) / 1000;
  const cpuMsPerEpisode: Record<string, number> = {};
  let cpuTotal = 0;
  for (const role of Object.keys(b.cpu)) {
    const d = (b.cpu[role] ?? 0) - (a.cpu[role] ?? 0);
    cpuTotal += d;
    cpuMsPerEpisode[role] = (1000 * d) / Math.max(1, w.finishedIn(a.t, b.t));
  }
  const orchestratorCpuMsPerEpisode = ORCHESTRATOR.reduce((s, r) => s + (cpuMsPerEpisode[r] ?? 0), 0);
  const inWindow = leg.samples.filter((s) => s.t >= a.t && s.t <= b.t);
  const pa = a.policy;
  const pb = b.policy;
  const policyBatch = pa && pb && pb.steps > pa.steps ? (pb.batchSum - pa.batchSum) / (pb.steps - pa.steps) : 0;
  const policyBusy = pa && pb ? (pb.busyMs - pa.busyMs) / 1000 / Math.max(dt, 1e-9) : 0;
  const policyQueueMs = pa && pb && pb.requests > pa.requests ? (pb.queueMs - pa.queueMs) / (pb.requests - pa.requests) : 0;
  const wait = (q: 'rollouts' | 'groups' | 'updates') => {
    const xs = w.waits(q, t0, t1);
    return { p50: pct(xs, 50), p95: pct(xs, 95) };
  };
  const ideal = idealOf(n);
  const idealAtMean = idealOf(Math.max(1, meanInFlight));
  const cpuCoresUsed = cpuTotal / Math.max(dt, 1e-9);
  const bounds = [
    ...(policyBatch >= 0.8 * batching.maxNumSeqs || policyQueueMs > 100
      ? [`policy server near capacity (mean batch ${policyBatch.toFixed(0)} of ${batching.maxNumSeqs}, ${policyQueueMs.toFixed(0)} ms queue per request)`]
      : []),
    ...(cpuCoresUsed >= 0.9 * cores ? [`CPU: ${cpuCoresUsed.toFixed(2)} of ${cores} cores busy`] : []),
    ...(meanInFlight < 0.9 * n
      ? [`pacing: ${meanInFlight.toFixed(0)} of ${n} in flight on average (admission waits for the lagged version, i.e. the slowest group)`]
      : []),
  ];
  const bound = bounds.length ? bounds.join('; ') : 'endpoint latency (the orchestrator is not the bound)';
  const loads = inWindow.map((s) => s.load1);
  return {
    inFlight: n,
    meanInFlight,
    windowS,
    episodes,
    eps,
    tokensPerS: eps * tokensPerEpisode,
    ideal,
    idealAtMean,
    cpuMsPerEpisode,
    orchestratorCpuMsPerEpisode,
    cpuCoresUsed,
    redisMemoryMB: Math.max(...inWindow.map((s) => s.redisMemory), 0) / 2 ** 20,
    redisOpsPerS: (b.redisCommands - a.redisCommands) / Math.max(dt, 1e-9),
    redisPerEpisode: Object.keys(b.redisByCommand)
      .map((k): [string, number] => [k, ((b.redisByCommand[k] ?? 0) - (a.redisByCommand[k] ?? 0)) / Math.max(1, w.finishedIn(a.t, b.t))])
      .filter(([, n]) => n > 0)
      .sort((x, y) => y[1] - x[1]),
    waits: { rollouts: wait('rollouts'), groups: wait('groups'), updates: wait('updates') },
    policyBatch,
    policyBusy,
    policyQueueMs,
    groupsLate: leg.metrics.reduce((s, m) => s + Number(m.groups_late ?? 0), 0),
    groupsDropped: leg.metrics.reduce((s, m) => s + Number(m.groups_dropped ?? 0), 0),
    bound,
    load: loads.length ? loads.reduce((x, y) => x + y, 0) / loads.length : 0,
  };
}
