// Orchestration benchmark (not part of `npm test`): synthetic policy server with a fixed
// latency per completion and a synthetic trainer step time, everything else real (Redis,
// BullMQ flows, workers, controller, files).
//   1. rollout throughput: trajectories/s against the ideal concurrency / latency;
//   2. wall time for maxPolicyLag 0, 1, 2 against the lower bound
//      max(total generation, total training).
// Run: node --import tsx bench/orchestrator/bench.ts [--latency-ms 200] [--train-ms 200] [--updates 16]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '../../configs/load.ts';
import type { Instance } from '../../data/schema.ts';
import { deletePrefixedKeys } from '../../workers/queues.ts';
import { runInProcess } from '../../workers/synthetic/in-process.ts';

const { values } = parseArgs({ options: { 'latency-ms': { type: 'string', default: '200' }, 'train-ms': { type: 'string', default: '200' }, updates: { type: 'string', default: '16' }, concurrency: { type: 'string', default: '8' } } });
const latencyMs = Number(values['latency-ms']);
const trainMs = Number(values['train-ms']);
const updates = Number(values.updates);
const concurrency = Number(values.concurrency);
process.env.GSTEER_SYNTHETIC_TRAIN_MS = String(trainMs);

const instances: Instance[] = Array.from({ length: 64 }, (_, k) => ({
  id: `b${k}`, userId: `u${k}`, taskId: 't', split: 'train', query: `bench query ${k}`, profile: '', persona: [],
  targets: [{ id: 't', description: 'd', seedQuestion: 'q', seedAnswer: 'a', weight: 1, essential: true, lateActivatable: false }], edges: [],
}));

const root = mkdtempSync(join(tmpdir(), 'gsteer-bench-'));
const prefix = `gsteer-bench:${process.pid}`;

function config(name: string, over: { lag: number; groupsPerUpdate: number; updates: number }) {
  return resolveConfig({
    runName: name, runDir: root, seed: 1, data: { instances: ['unused.jsonl'] },
    policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1' },
    rollout: { groupSize: 4, concurrency, workers: 1 },
    grpo: { maxUpdates: over.updates, groupsPerUpdate: over.groupsPerUpdate, maxPolicyLag: over.lag, learningRate: 0.05, passes: 50 },
    checkpoint: { every: 1000, keep: 1 },
    queues: { prefix: `${prefix}:${name}`, pollMs: 10 },
  });
}

const fmt = (x: number, d = 2) => x.toFixed(d);
const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  console.log(s);
};

out(`synthetic policy latency ${latencyMs} ms/completion, trainer step ${trainMs} ms, rollout concurrency ${concurrency}, G = 4\n`);

// 1. Throughput: one update of 16 groups x 4 = 64 rollouts (training negligible next to it).
{
  process.env.GSTEER_SYNTHETIC_TRAIN_MS = '0';
  const r = await runInProcess(config('tput', { lag: 0, groupsPerUpdate: 16, updates: 1 }), instances, { latencyMs });
  const rolloutSeconds = Number(r.metrics[0]?.rollout_seconds);
  const ideal = concurrency / (latencyMs / 1000);
  out('| measure | trajectories/s | ideal (concurrency / latency) | ratio |');
  out('|---|---|---|---|');
  out(`| 64 rollouts, rollout stage only | ${fmt(64 / rolloutSeconds)} | ${fmt(ideal)} | ${fmt(64 / rolloutSeconds / ideal)} |`);
  out(`| 64 rollouts, whole update (incl. group stage, trainer, adapter load) | ${fmt(64 / r.seconds)} | ${fmt(ideal)} | ${fmt(64 / r.seconds / ideal)} |\n`);
  process.env.GSTEER_SYNTHETIC_TRAIN_MS = String(trainMs);
}

// 2. Overlap: `updates` updates of 2 groups x 4 = 8 rollouts (one latency per update when concurrency >= 8).
const genPerUpdate = Math.ceil(8 / concurrency) * latencyMs;
const bound = (Math.max(genPerUpdate, trainMs) * updates) / 1000;
out(`| maxPolicyLag | updates | wall s | lower bound max(gen, train) s | wall / bound | serial gen + train s | mean policy_lag |`);
out('|---|---|---|---|---|---|---|');
for (const lag of [0, 1, 2]) {
  const r = await runInProcess(config(`lag${lag}`, { lag, groupsPerUpdate: 2, updates }), instances, { latencyMs });
  if (r.outcome.kind !== 'done') throw new Error(`lag ${lag}: ${r.outcome.kind} ${r.outcome.message ?? ''}`);
  const meanLag = r.metrics.reduce((s, m) => s + Number(m.policy_lag), 0) / r.metrics.length;
  out(`| ${lag} | ${updates} | ${fmt(r.seconds)} | ${fmt(bound)} | ${fmt(r.seconds / bound)} | ${fmt(((genPerUpdate + trainMs) * updates) / 1000)} | ${fmt(meanLag)} |`);
}

// Clean up exactly our keys and files.
await deletePrefixedKeys(prefix);
rmSync(root, { recursive: true, force: true });
