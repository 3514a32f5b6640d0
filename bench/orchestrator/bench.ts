// Orchestration benchmark (not part of `npm test`): synthetic policy server with a fixed
// latency per completion and a synthetic trainer step time, everything else real (Redis,
// BullMQ flows, workers, controller, files).
//   1. rollout throughput: trajectories/s against the ideal concurrency / latency;
//   2. wall time for maxPolicyLag 0, 1, 2 against the lower bound
//      max(total generation, total training).
// Each row runs twice, back to back: with the orchestration shortcuts off
// (every `orchestrator.*` switch of the run config off, bench/orchestrator/modes.ts: the
// behaviour before them) and on, so
// both see the same machine load; the load average is printed with the tables.
// Run: node --import tsx bench/orchestrator/bench.ts [--latency-ms 200] [--train-ms 200] [--updates 16] [--reps 1]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '../../configs/load.ts';
import type { Instance } from '../../data/schema.ts';
import { deletePrefixedKeys } from '../../util/redis.ts';
import { runInProcess } from '../../workers/synthetic/in-process.ts';
import { shortcutsOff } from './modes.ts';

const { values } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '200' },
    'train-ms': { type: 'string', default: '200' },
    updates: { type: 'string', default: '16' },
    concurrency: { type: 'string', default: '8' },
    reps: { type: 'string', default: '1' },
  },
});
const latencyMs = Number(values['latency-ms']);
const trainMs = Number(values['train-ms']);
const updates = Number(values.updates);
const concurrency = Number(values.concurrency);
const reps = Number(values.reps);
const MODES = [
  { name: 'before', disable: 'all' },
  { name: 'after', disable: '' },
] as const;
/** Every run of `once` per mode (before, after), `reps` times interleaved. */
async function compare<T>(once: (tag: string, off: string) => Promise<T>): Promise<T[][]> {
  const got: T[][] = MODES.map(() => []);
  for (let r = 0; r < reps; r++)
    for (const [k, m] of MODES.entries()) {
      got[k]!.push(await once(`${m.name}${r}`, m.disable));
    }
  return got;
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
process.env.GSTEER_SYNTHETIC_TRAIN_MS = String(trainMs);

const instances: Instance[] = Array.from({ length: 64 }, (_, k) => ({
  id: `b${k}`,
  userId: `u${k}`,
  taskId: 't',
  split: 'train',
  query: `bench query ${k}`,
  profile: '',
  persona: [],
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1, essential: true, lateActivatable: false }],
  edges: [],
}));

const root = mkdtempSync(join(tmpdir(), 'gsteer-bench-'));
const prefix = `gsteer-bench:${process.pid}`;

function config(name: string, off: string, over: { lag: number; groupsPerUpdate: number; updates: number }) {
  return resolveConfig({
    runName: name,
    runDir: root,
    seed: 1,
    data: { instances: ['unused.jsonl'] },
    policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1' },
    rollout: { groupSize: 4, concurrency, workers: 1 },
    grpo: { maxUpdates: over.updates, groupsPerUpdate: over.groupsPerUpdate, maxPolicyLag: over.lag, learningRate: 0.05, passes: 50 },
    checkpoint: { every: 1000, keep: 1 },
    queues: { prefix: `${prefix}:${name}`, pollMs: 10 },
    orchestrator: shortcutsOff(off),
  });
}

const fmt = (x: number, d = 2) => x.toFixed(d);
const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  console.log(s);
};

out(
  `synthetic policy latency ${latencyMs} ms/completion, trainer step ${trainMs} ms, rollout concurrency ${concurrency}, G = 4; median of ${reps} run(s) per cell, before/after interleaved; load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}\n`,
);

// 1. Throughput: one update of 16 groups x 4 = 64 rollouts (training negligible next to it).
{
  process.env.GSTEER_SYNTHETIC_TRAIN_MS = '0';
  const ideal = concurrency / (latencyMs / 1000);
  const per = await compare(async (tag, off) => {
    const r = await runInProcess(config(`tput-${tag}`, off, { lag: 0, groupsPerUpdate: 16, updates: 1 }), instances, { latencyMs });
    return { rollout: 64 / Number(r.metrics[0]?.rollout_seconds), whole: 64 / r.seconds };
  });
  const [rb, ra] = per.map((xs) => median(xs.map((x) => x.rollout)));
  const [wb, wa] = per.map((xs) => median(xs.map((x) => x.whole)));
  out('| measure | ideal (concurrency / latency) | before: trajectories/s | ratio | after: trajectories/s | ratio |');
  out('|---|---|---|---|---|---|');
  out(`| 64 rollouts, rollout stage only | ${fmt(ideal)} | ${fmt(rb!)} | ${fmt(rb! / ideal)} | ${fmt(ra!)} | ${fmt(ra! / ideal)} |`);
  out(
    `| 64 rollouts, whole update (incl. group stage, trainer, adapter load, final checkpoint) | ${fmt(ideal)} | ${fmt(wb!)} | ${fmt(wb! / ideal)} | ${fmt(wa!)} | ${fmt(wa! / ideal)} |\n`,
  );
  process.env.GSTEER_SYNTHETIC_TRAIN_MS = String(trainMs);
}

// 2. Overlap: `updates` updates of 2 groups x 4 = 8 rollouts (one latency per update when concurrency >= 8).
const genPerUpdate = Math.ceil(8 / concurrency) * latencyMs;
const bound = (Math.max(genPerUpdate, trainMs) * updates) / 1000;
out(
  `| maxPolicyLag | updates | lower bound max(gen, train) s | serial gen + train s | before: wall s | wall / bound | after: wall s | wall / bound | after: mean policy_lag |`,
);
out('|---|---|---|---|---|---|---|---|---|');
for (const lag of [0, 1, 2]) {
  let meanLag = 0;
  const [b, a] = (
    await compare(async (tag, off) => {
      const r = await runInProcess(config(`lag${lag}-${tag}`, off, { lag, groupsPerUpdate: 2, updates }), instances, { latencyMs });
      if (r.outcome.kind !== 'done') throw new Error(`lag ${lag}: ${r.outcome.kind} ${r.outcome.message ?? ''}`);
      meanLag = r.metrics.reduce((s, m) => s + Number(m.policy_lag), 0) / r.metrics.length;
      return r.seconds;
    })
  ).map(median);
  out(
    `| ${lag} | ${updates} | ${fmt(bound)} | ${fmt(((genPerUpdate + trainMs) * updates) / 1000)} | ${fmt(b!)} | ${fmt(b! / bound)} | ${fmt(a!)} | ${fmt(a! / bound)} | ${fmt(meanLag)} |`,
  );
}
out(
  `\nload average at the end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);

// Clean up exactly our keys and files.
await deletePrefixedKeys(prefix);
rmSync(root, { recursive: true, force: true });
