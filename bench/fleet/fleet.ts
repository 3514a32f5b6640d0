// The fleet simulation (issue 35; bench/fleet/README.md): real gsteer (`gsteer train`: the
// controller, N rollout worker processes, the group and trainer workers, BullMQ on a Redis
// of its own) against local HTTP endpoints that behave like the real ones in time: a policy
// server with vLLM-style continuous batching, a simulator endpoint with a long-tailed
// latency, stalls and 429s, and the synthetic trainer with a fixed step time. For each
// number of episodes in flight it prints episodes/s and tokens/s against the ideal the
// endpoints allow (Little's law, ideal.ts), the orchestrator's CPU per episode, Redis memory
// and commands/s, queue waits and what bounds it. --compare-cluster N runs N in flight on
// one Redis and on a local 3-master Redis Cluster (rewards and adapter bytes compared);
// --drill SIGKILLs the largest leg mid-run and resumes it, counting every episode.
// Run: node --import tsx bench/fleet/fleet.ts [options]   (options: README.md)
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { adapterDirName } from '../../checkpoints/layout.ts';
import { reproducible } from '../../workers/update-metrics.ts';
import type { BatchingOptions } from '../../workers/synthetic/batching.ts';
import { capacity } from '../../workers/synthetic/batching.ts';
import type { SimulatorTiming } from '../../workers/synthetic/simulator-server.ts';
import { countDrill } from './drill.ts';
import { idealThroughput } from './ideal.ts';
import { groupsPerUpdateOf, runLeg, type LegOptions, type LegResult } from './leg.ts';
import { legRow, ORCHESTRATOR, type Row } from './report.ts';

const { values: v } = parseArgs({
  options: {
    'in-flight': { type: 'string', default: '64,256,1024' },
    workers: { type: 'string', default: '4' },
    lag: { type: 'string', default: '3' },
    window: { type: 'string', default: '2' },
    'group-size': { type: 'string', default: '4' },
    updates: { type: 'string', default: '12' },
    'max-turns': { type: 'string', default: '6' },
    tokens: { type: 'string', default: '128' },
    'train-ms': { type: 'string', default: '2000' },
    'deadline-ms': { type: 'string', default: '180000' },
    'sim-median-ms': { type: 'string', default: '1500' },
    'sim-p99-ms': { type: 'string', default: '6000' },
    'sim-stall-share': { type: 'string', default: '0.005' },
    'sim-stall-ms': { type: 'string', default: '30000' },
    'sim-429-share': { type: 'string', default: '0.01' },
    'sim-timeout-ms': { type: 'string', default: '10000' },
    'max-num-seqs': { type: 'string', default: '512' },
    'step-ms': { type: 'string', default: '15' },
    'step-ms-per-seq': { type: 'string', default: '0.03' },
    'prefill-ms-per-token': { type: 'string', default: '0.002' },
    cluster: { type: 'boolean', default: false },
    'compare-cluster': { type: 'string' },
    drill: { type: 'boolean', default: false },
    ab: { type: 'string' },
    seed: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
  },
});
const num = (k: keyof typeof v) => Number(v[k]);
const batching: BatchingOptions = {
  maxNumSeqs: num('max-num-seqs'),
  maxPrefillTokens: 16384,
  stepMs: num('step-ms'),
  stepMsPerSeq: num('step-ms-per-seq'),
  prefillMsPerToken: num('prefill-ms-per-token'),
};
const simulator: SimulatorTiming = {
  medianMs: num('sim-median-ms'),
  p99Ms: num('sim-p99-ms'),
  stallShare: num('sim-stall-share'),
  stallMs: num('sim-stall-ms'),
  share429: num('sim-429-share'),
  retryAfterS: 1,
};
const deadline = num('deadline-ms') > 0 ? num('deadline-ms') : null;
const levels = String(v['in-flight']).split(',').map(Number);
const root = mkdtempSync(join(tmpdir(), 'gsteer-fleet-'));
const cores = availableParallelism();
const maxTurns = num('max-turns');
const K = num('tokens');
// Mean prompt of a turn: 16 query tokens, then each earlier turn's completion and 32 reply tokens.
const meanPrompt = 16 + ((maxTurns - 1) / 3) * (K + 32);
const idealOf = (n: number) =>
  idealThroughput(n, { maxTurns, tokensPerTurn: K, meanPromptTokens: meanPrompt }, batching, simulator, { timeoutMs: num('sim-timeout-ms'), backoffMs: 500 });
const base = (name: string, n: number, over: Partial<LegOptions> = {}): LegOptions => ({
  name,
  root,
  inFlight: n,
  workers: num('workers'),
  lag: num('lag'),
  window: num('window'),
  groupSize: num('group-size'),
  updates: num('updates'),
  maxTurns,
  tokensPerTurn: K,
  trainMs: num('train-ms'),
  deadlineMs: deadline,
  simTimeoutMs: num('sim-timeout-ms'),
  batching,
  simulator,
  cluster: v.cluster === true,
  seed: num('seed'),
  log: (m) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${m}`),
  ...over,
});
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const t0 = Date.now();
const out: string[] = [];
const say = (s = '') => {
  out.push(s);
  console.log(s);
};

say(`fleet simulation: ${cores} cores, load average ${load()} at the start; ${v.cluster ? 'Redis Cluster (3 masters)' : 'one Redis'} per leg`);
say(
  `policy server: max_num_seqs ${batching.maxNumSeqs}, step ${batching.stepMs} ms + ${batching.stepMsPerSeq} ms/seq, prefill ${batching.prefillMsPerToken} ms/token: capacity ${f(capacity(batching), 0)} tokens/s`,
);
say(
  `simulator: median ${simulator.medianMs} ms, p99 ${simulator.p99Ms} ms, ${simulator.stallShare * 100}% stall ${simulator.stallMs} ms (client timeout ${v['sim-timeout-ms']} ms), ${simulator.share429 * 100}% 429; trainer step ${v['train-ms']} ms`,
);
say(
  `episodes: 1..${maxTurns} turns of ${K} tokens, a simulator call between turns; G = ${v['group-size']}, lag ${v.lag}, admission window ${v.window} x N, ${v.updates} updates, ${v.workers} rollout worker processes, group deadline ${deadline ?? 'off'} ms\n`,
);

const rows: Row[] = [];
for (const n of levels) {
  const leg = await runLeg(base(`n${n}`, n));
  if (leg.exitCode !== 0) throw new Error(`leg n${n}: gsteer exited ${leg.exitCode}`);
  rows.push(legRow(n, leg, ((maxTurns + 1) / 2) * K, idealOf, batching, cores));
}

say(
  '| in flight N | mean in flight | episodes/s | ideal episodes/s (bound) | ratio | ratio at mean in flight | tokens/s | ideal tokens/s | orchestrator CPU ms/episode | cores busy (the run) | load average | Redis MB | Redis commands/s | groups late |',
);
say('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows)
  say(
    `| ${r.inFlight} | ${f(r.meanInFlight, 0)} | ${f(r.eps)} | ${f(r.ideal.episodesPerSecond)} (${r.ideal.bound}) | **${f(r.eps / r.ideal.episodesPerSecond)}** | ${f(r.eps / r.idealAtMean.episodesPerSecond)} | ${f(r.tokensPerS, 0)} | ${f(r.ideal.tokensPerSecond, 0)} | ${f(r.orchestratorCpuMsPerEpisode, 1)} | ${f(r.cpuCoresUsed)} | ${f(r.load, 1)} | ${f(r.redisMemoryMB, 1)} | ${f(r.redisOpsPerS, 0)} | ${r.groupsLate} |`,
  );
const roles = [...ORCHESTRATOR, 'policy endpoint', 'simulator endpoint', 'bench'];
say(`\nCPU ms per episode, by process (orchestrator: ${ORCHESTRATOR.join(', ')}):\n`);
say(`| in flight N | ${roles.join(' | ')} |`);
say(`|---|${roles.map(() => '---').join('|')}|`);
for (const r of rows) say(`| ${r.inFlight} | ${roles.map((x) => f(r.cpuMsPerEpisode[x] ?? 0, 1)).join(' | ')} |`);
say('\nQueue waits (ms, p50 / p95) and the policy server over the window:\n');
say(
  '| in flight N | rollout: added -> active | group: waiting -> active | update: waiting -> active | policy mean batch | policy busy | policy queue ms/request | ideal episode s (policy + simulator) | what bounds it |',
);
say('|---|---|---|---|---|---|---|---|---|');
for (const r of rows)
  say(
    `| ${r.inFlight} | ${f(r.waits.rollouts.p50, 0)} / ${f(r.waits.rollouts.p95, 0)} | ${f(r.waits.groups.p50, 0)} / ${f(r.waits.groups.p95, 0)} | ${f(r.waits.updates.p50, 0)} / ${f(r.waits.updates.p95, 0)} | ${f(r.policyBatch, 0)} | ${f(r.policyBusy)} | ${f(r.policyQueueMs, 0)} | ${f(r.ideal.episodeSeconds, 1)} (${f(r.ideal.policySeconds, 1)} + ${f(r.ideal.simulatorSeconds, 1)}) | ${r.bound} |`,
  );

say('\nRedis commands per episode (INFO commandstats; BullMQ runs most of its work as EVALSHA scripts):\n');
for (const r of rows)
  say(
    `- ${r.inFlight} in flight: ${r.redisPerEpisode
      .slice(0, 8)
      .map(([k, n]) => `${k} ${f(n, 1)}`)
      .join(', ')} (all: ${f(
      r.redisPerEpisode.reduce((s, [, n]) => s + n, 0),
      0,
    )})`,
  );

const sha = (leg: LegResult) =>
  createHash('sha256')
    .update(readFileSync(join(leg.runDir, 'adapters', adapterDirName(num('updates')), 'adapter_model.safetensors')))
    .digest('hex');
/** What must match between two runs of the same config: every metric but timing and the LLM call counts (stalls and 429s are random). */
const comparable = (leg: LegResult) => leg.metrics.map((m) => Object.fromEntries(Object.entries(reproducible(m)).filter(([k]) => !k.startsWith('llm/'))));

if (v.ab) {
  // The same leg with the group-stage polling as it was before this bench (orchestrator.sparseGroupPolls off), against it on.
  const n = Number(v.ab);
  const tokens = ((maxTurns + 1) / 2) * K;
  const before = legRow(n, await runLeg(base(`ab-before-${n}`, n, { orchestrator: { sparseGroupPolls: false } })), tokens, idealOf, batching, cores);
  const after = rows.find((r) => r.inFlight === n) ?? legRow(n, await runLeg(base(`ab-after-${n}`, n)), tokens, idealOf, batching, cores);
  const perEpisode = (r: Row) => r.redisPerEpisode.reduce((s, [, x]) => s + x, 0);
  say(`\n${n} in flight, orchestrator.sparseGroupPolls off (before) and on (after):\n`);
  say('| | episodes/s | ratio to ideal | orchestrator CPU ms/episode | Redis commands/episode | group wait p95 ms | load average |');
  say('|---|---|---|---|---|---|---|');
  for (const [name, r] of [
    ['before', before],
    ['after', after],
  ] as const)
    say(
      `| ${name} | ${f(r.eps)} | ${f(r.eps / r.ideal.episodesPerSecond)} | ${f(r.orchestratorCpuMsPerEpisode, 1)} | ${f(perEpisode(r), 0)} | ${f(r.waits.groups.p95, 0)} | ${f(r.load, 1)} |`,
    );
  say(
    `\nafter / before: Redis commands per episode ${f(perEpisode(after) / perEpisode(before))}, orchestrator CPU per episode ${f(after.orchestratorCpuMsPerEpisode / before.orchestratorCpuMsPerEpisode)}`,
  );
}

if (v['compare-cluster']) {
  const n = Number(v['compare-cluster']);
  // No deadline: which groups are late depends on timing, and the comparison is of results.
  const one = await runLeg(base(`cmp-one-${n}`, n, { cluster: false, deadlineMs: null }));
  const many = await runLeg(base(`cmp-cluster-${n}`, n, { cluster: true, deadlineMs: null }));
  const same = JSON.stringify(comparable(one)) === JSON.stringify(comparable(many));
  say(
    `\n${n} in flight, no group deadline, on one Redis and on a local 3-master Redis Cluster (every key of the run under its run id's hash tag: one slot):\n`,
  );
  say('| Redis | gsteer exit | updates | episodes/s | mean reward (last update) | adapter sha256 (last version) |');
  say('|---|---|---|---|---|---|');
  for (const [name, leg] of [
    ['one', one],
    ['cluster', many],
  ] as const) {
    const r = legRow(n, leg, ((maxTurns + 1) / 2) * K, idealOf, batching, cores);
    say(`| ${name} | ${leg.exitCode} | ${leg.metrics.length} | ${f(r.eps)} | ${f(Number(leg.metrics.at(-1)?.reward), 6)} | ${sha(leg).slice(0, 16)}... |`);
  }
  say(`\nrewards and every other reproducible metric equal: ${same}; adapter bytes equal: ${sha(one) === sha(many)}`);
}

if (v.drill) {
  const n = Math.max(...levels);
  // No deadline here either: every planned episode must end up trained.
  const leg = await runLeg(base(`drill-${n}`, n, { deadlineMs: null, killAfter: Math.floor(num('updates') / 2) }));
  const groupsPerUpdate = groupsPerUpdateOf(base('', n));
  const c = countDrill(leg.runDir, leg.metrics, groupsPerUpdate * num('updates') * num('group-size'), num('group-size'));
  say(`\nResume drill: ${n} in flight, SIGKILL of every process of the run after update ${Math.floor(num('updates') / 2)}, then gsteer resume:\n`);
  say(
    '| in flight at the kill | resume exit | planned episodes | trained exactly once | duplicated | lost | in dropped groups | kept from before the kill (episodes/reused) | policy calls on record = turns |',
  );
  say('|---|---|---|---|---|---|---|---|---|');
  say(
    `| ${leg.killed?.inFlight ?? '-'} | ${leg.killed?.resumeExit ?? leg.exitCode} | ${c.planned} | ${c.trainedOnce} | ${c.duplicated} | ${c.lost} | ${c.inDroppedGroups} | ${c.reused} | ${c.callsMatchTurns} of ${c.callsMatchTurns + c.callsMismatch} |`,
  );
}

say(`\nload average at the end ${load()}; ${f((Date.now() - t0) / 1000, 0)} s in all`);
if (!v.keep) rmSync(root, { recursive: true, force: true });
else console.error(`kept ${root}`);
