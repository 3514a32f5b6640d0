// Where an update's wall time goes (not part of `npm test`): the bench's lag-0 run (2 groups
// x 4 rollouts per update, synthetic policy and trainer, everything else real), timed from
// BullMQ's own job events (the `<prefix>:<queue>:events` streams, Redis server clock) and the
// controller's milestones (ControllerDeps.trace). At lag 0 the phases follow each other, so
// they add up to the time per update; everything but "generation" and "training" is overhead.
// Each mode runs --reps times, interleaved, so both see the same machine load.
// --modes: the shortcut lists to turn off, compared, separated by '/' (bench/orchestrator/modes.ts,
// the run config's orchestrator.* switches; empty = every shortcut on), e.g. --modes 'all/fetchers/' for an ablation.
// Run: node --import tsx bench/orchestrator/profile.ts [--latency-ms 200] [--train-ms 200] [--updates 8] [--reps 2] [--lag 0] [--modes 'all/']
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { resolveConfig } from '../../configs/load.ts';
import type { Instance } from '../../data/schema.ts';
import { deletePrefixedKeys } from '../../util/redis.ts';
import { jobId, QUEUE } from '../../checkpoints/run-keys.ts';
import type { Parts } from '../../workers/parts.ts';
import { runInProcess } from '../../workers/synthetic/in-process.ts';
import { shortcutsOff } from './modes.ts';

const { values } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '200' },
    'train-ms': { type: 'string', default: '200' },
    updates: { type: 'string', default: '8' },
    reps: { type: 'string', default: '2' },
    lag: { type: 'string', default: '0' },
    modes: { type: 'string', default: 'all/' },
  },
});
const latencyMs = Number(values['latency-ms']);
const trainMs = Number(values['train-ms']);
const updates = Number(values.updates);
const reps = Number(values.reps);
const lag = Number(values.lag);
process.env.GSTEER_SYNTHETIC_TRAIN_MS = String(trainMs);
const MODES = values.modes.split('/').map((disable) => ({ name: disable ? `off: ${disable}` : 'all shortcuts on', disable }));

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
const root = mkdtempSync(join(tmpdir(), 'gsteer-profile-'));
const prefix = `gsteer-bench:${process.pid}`;
const redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });

/** jobId -> event name -> first time (ms) it happened, from one queue's event stream. */
async function jobEvents(p: string, queue: string): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>();
  for (const [id, fields] of await redis.xrange(`${p}:${queue}:events`, '-', '+')) {
    const f: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
    if (!f.jobId || !f.event) continue;
    const m = out.get(f.jobId) ?? new Map<string, number>();
    if (!m.has(f.event)) m.set(f.event, Number(id.split('-')[0]));
    if (f.event === 'completed') m.set('completed', Number(id.split('-')[0])); // the last attempt
    out.set(f.jobId, m);
  }
  return out;
}

const PHASES = [
  'admission (adapter s - 1 loaded -> flow of s added)',
  'rollout pickup (flow added -> first rollout active)',
  'generation (first rollout active -> last completed)',
  'group pickup (last rollout -> first group active)',
  'group stage, 2 groups (first group active -> last completed)',
  'trainer pickup (last group -> update active)',
  'training (update active -> completed)',
  'controller sees the update',
  'adapter load',
  '**sum = wall per update**',
  'off the chain: per rollout active -> completed, less the latency',
  'off the chain: of it the policy call (HTTP client + server), less the latency',
  'off the chain: controller sees groups + user-state dump',
  'off the chain: metrics + checkpoint',
] as const;

async function profileRun(run: string, disable: string): Promise<{ phases: number[][]; perUpdate: number; delayed: number }> {
  const p = `${prefix}:${run}`;
  const cfg = resolveConfig({
    runName: run,
    runDir: root,
    seed: 1,
    data: { instances: ['unused.jsonl'] },
    policy: { server: 'external', baseUrl: 'http://127.0.0.1:1/v1' },
    rollout: { groupSize: 4, concurrency: 8, workers: 1 },
    grpo: { maxUpdates: updates, groupsPerUpdate: 2, maxPolicyLag: lag, learningRate: 0.05, passes: 50 },
    checkpoint: { every: 1000, keep: 1 },
    queues: { prefix: p, pollMs: 10 },
    orchestrator: shortcutsOff(disable),
  });
  const marks = new Map<string, number>();
  const calls = new Map<number, number[]>(); // step -> rollout.run ms less the latency
  const timed = (parts: Parts): Parts => ({
    ...parts,
    rollout: async () => {
      const inner = await parts.rollout();
      return {
        close: () => inner.close(),
        async run(c) {
          const t = performance.now();
          const traj = await inner.run(c);
          calls.set(c.job.step, [...(calls.get(c.job.step) ?? []), performance.now() - t - latencyMs]);
          return traj;
        },
      };
    },
  });
  const r = await runInProcess(cfg, instances, { latencyMs, parts: timed, trace: (e, s) => marks.set(`${e}:${s}`, Date.now()), keepKeys: true });
  if (r.outcome.kind !== 'done') throw new Error(`${run}: ${r.outcome.kind} ${r.outcome.message ?? ''}`);
  const [ro, gr, up] = await Promise.all([QUEUE.rollouts, QUEUE.groups, QUEUE.updates].map((q) => jobEvents(p, q)));
  const at = (m: Map<string, Map<string, number>> | undefined, id: string, ev: string) => m!.get(id)?.get(ev) ?? NaN;
  const phases: number[][] = [];
  for (let s = 2 + lag; s <= updates; s++) {
    const rIds = [0, 1].flatMap((g) => [0, 1, 2, 3].map((i) => jobId.rollout(run, 0, s, g, i)));
    const gIds = [0, 1].map((g) => jobId.group(run, 0, s, g));
    const uId = jobId.update(run, 0, s);
    const firstActive = Math.min(...rIds.map((id) => at(ro, id, 'active')));
    const lastDone = Math.max(...rIds.map((id) => at(ro, id, 'completed')));
    const perRollout = rIds.reduce((a, id) => a + at(ro, id, 'completed') - at(ro, id, 'active') - latencyMs, 0) / rIds.length;
    const groupStart = Math.min(...gIds.map((id) => at(gr, id, 'active')));
    const groupEnd = Math.max(...gIds.map((id) => at(gr, id, 'completed')));
    const m = (e: string, k = s) => marks.get(`${e}:${k}`) ?? NaN;
    const chain = [
      m('admitted') - m('loaded', s - 1 - lag),
      firstActive - m('admitted'),
      lastDone - firstActive,
      groupStart - lastDone,
      groupEnd - groupStart,
      at(up, uId, 'active') - groupEnd,
      at(up, uId, 'completed') - at(up, uId, 'active'),
      m('update-seen') - at(up, uId, 'completed'),
      m('loaded') - m('update-seen'),
    ];
    phases.push([
      ...chain,
      chain.reduce((a, b) => a + b, 0),
      perRollout,
      (calls.get(s) ?? []).reduce((a, b) => a + b, 0) / (calls.get(s)?.length ?? NaN),
      m('groups-done') - groupEnd,
      m('recorded') - m('loaded'),
    ]);
  }
  let delayed = 0;
  for (const ev of gr!.values()) if (ev.has('delayed')) delayed++;
  return { phases, perUpdate: (m2(marks, updates) - m2(marks, 1)) / (updates - 1), delayed };
}
const m2 = (marks: Map<string, number>, s: number) => marks.get(`loaded:${s}`) ?? NaN;

const results = MODES.map(() => ({ phases: [] as number[][], perUpdate: [] as number[], delayed: 0 }));
const load0 = loadavg()[0]!;
for (let rep = 0; rep < reps; rep++)
  for (const [k, mode] of MODES.entries()) {
    const r = await profileRun(`p${rep}m${k}`, mode.disable);
    results[k]!.phases.push(...r.phases);
    results[k]!.perUpdate.push(r.perUpdate);
    results[k]!.delayed += r.delayed;
  }
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f = (x: number) => x.toFixed(1);
console.log(
  `maxPolicyLag ${lag}, ${updates} updates x ${reps} reps per mode, 2 groups x 4 rollouts, latency ${latencyMs} ms, train ${trainMs} ms; load average ${load0.toFixed(2)} -> ${loadavg()[0]!.toFixed(2)}\n`,
);
console.log(`| phase (mean ms per update, updates ${2 + lag}..${updates}) | ${MODES.map((m) => m.name).join(' | ')} |`);
console.log(`|---|${MODES.map(() => '---').join('|')}|`);
PHASES.forEach((name, i) => console.log(`| ${name} | ${results.map((r) => f(mean(r.phases.map((p) => p[i]!)))).join(' | ')} |`));
console.log(`| wall per update, whole run (loaded -> loaded) | ${results.map((r) => f(mean(r.perUpdate))).join(' | ')} |`);
console.log(`| group jobs moved to delayed (ordering), per run | ${results.map((r) => f(r.delayed / reps)).join(' | ')} |`);

await redis.quit();
await deletePrefixedKeys(prefix);
rmSync(root, { recursive: true, force: true });
