// One leg of the fleet simulation: its own Redis (one redis-server, or a local 3-master
// Redis Cluster), the policy server with continuous batching and the simulator endpoint
// as their own processes, and a real `gsteer train` (controller, supervisor, trainer,
// group and N rollout worker processes, GSTEER_PARTS=synthetic) against them. While it
// runs the bench follows the queues (watch.ts) and samples CPU, Redis and the endpoints
// once a second; with `killAfter` it SIGKILLs the whole run once that many updates are
// recorded and `gsteer resume`s it (the resume drill, drill.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { readMetrics, type MetricsRecord } from '../../monitor/sink.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { readRunInfo } from '../../checkpoints/run-info.ts';
import { queuePrefix } from '../../checkpoints/run-keys.ts';
import { connect } from '../../util/redis.ts';
import { freePort } from '../../workers/launch.ts';
import type { BatchingOptions, BatchStats } from '../../workers/synthetic/batching.ts';
import type { SimulatorStats, SimulatorTiming } from '../../workers/synthetic/simulator-server.ts';
import { startRedisCluster } from '../../tests/helpers/redis-cluster.ts';
import { children, cpuSeconds, redisSample, roleOf } from './procs.ts';
import { QueueWatch } from './watch.ts';

export interface LegOptions {
  name: string;
  root: string;
  inFlight: number;
  workers: number;
  lag: number;
  /** Episodes admitted at most ((lag + 1) updates), as a multiple of inFlight: > 1 keeps work queued for every rollout slot. */
  window: number;
  groupSize: number;
  updates: number;
  maxTurns: number;
  tokensPerTurn: number;
  trainMs: number;
  deadlineMs: number | null;
  simTimeoutMs: number;
  batching: BatchingOptions;
  simulator: SimulatorTiming;
  cluster: boolean;
  seed: number;
  /** Overrides of the run config's `orchestrator` switches (the --ab leg turns one off). */
  orchestrator?: Record<string, unknown>;
  /** The drill: SIGKILL the run once this many updates are recorded, then resume it. */
  killAfter?: number;
  log: (m: string) => void;
}

export interface Sample {
  t: number; // ms (Date.now)
  cpu: Record<string, number>; // cumulative CPU seconds by role
  redisMemory: number;
  redisCommands: number;
  redisByCommand: Record<string, number>;
  inFlight: number;
  load1: number; // the machine's 1-minute load average
  policy?: BatchStats;
  simulator?: SimulatorStats;
}

export interface LegResult {
  runDir: string;
  metrics: MetricsRecord[];
  samples: Sample[];
  watch: QueueWatch;
  exitCode: number | null;
  /** The drill: rollouts active at the kill, and when it happened. */
  killed?: { at: number; inFlight: number; resumeExit: number | null };
}

const REPO = new URL('../..', import.meta.url).pathname;
const CLI = join(REPO, 'cli/gsteer.mjs');
const TSX = import.meta.resolve('tsx');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Start a node script that prints its URL first; resolves with the process and the URL. */
function startServer(script: string, args: string[]): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, ['--import', TSX, join(REPO, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve({ proc, url: line.trim() });
    });
    proc.once('exit', (code) => reject(new Error(`${script} exited (${code}) before printing its URL`)));
  });
}

async function stopProc(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const force = setTimeout(() => p.kill('SIGKILL'), 5000);
    p.once('exit', () => (clearTimeout(force), resolve()));
    p.kill('SIGTERM');
  });
}

/** Groups per update: the admission window (lag + 1 updates) holds window x inFlight episodes. */
export const groupsPerUpdateOf = (o: Pick<LegOptions, 'inFlight' | 'window' | 'groupSize' | 'lag'>) =>
  Math.max(1, Math.round((o.window * o.inFlight) / (o.groupSize * (o.lag + 1))));

/** One distinct user per instance, enough instances that no update shares a user with another. */
function writeInstances(file: string, n: number): void {
  const lines = Array.from({ length: n }, (_, k) =>
    JSON.stringify({
      id: `f${k}`,
      userId: `fu${k}`,
      taskId: 't',
      split: 'train',
      query: `fleet query number ${k}`,
      profile: '',
      persona: [],
      targets: [{ id: 't', description: 'd', seedQuestion: 'q?', seedAnswer: 'a', weight: 1, essential: true }],
      edges: [],
    }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
}

async function getJson<T>(url: string): Promise<T | undefined> {
  try {
    return (await (await fetch(url)).json()) as T;
  } catch {
    return undefined;
  }
}

export async function runLeg(o: LegOptions): Promise<LegResult> {
  const dir = join(o.root, o.name);
  mkdirSync(dir, { recursive: true });
  const stops: (() => Promise<void>)[] = [];
  try {
    // Redis: the leg's own, so its memory and commands are the run's alone.
    let redisUrl: string;
    let redisPorts: number[];
    if (o.cluster) {
      const c = await startRedisCluster(3);
      stops.push(c.stop);
      redisUrl = c.url;
      redisPorts = c.ports;
    } else {
      const port = await freePort();
      const p = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      stops.push(() => stopProc(p));
      redisUrl = `redis://127.0.0.1:${port}`;
      redisPorts = [port];
      for (
        let i = 0;
        i < 50 &&
        !(await redisSample(port).then(
          () => true,
          () => false,
        ));
        i++
      )
        await sleep(100);
    }
    const policy = await startServer('workers/synthetic/server-main.ts', ['--batching', JSON.stringify(o.batching)]);
    stops.push(() => stopProc(policy.proc));
    const sim = await startServer('workers/synthetic/simulator-main.ts', ['--timing', JSON.stringify(o.simulator), '--seed', String(o.seed)]);
    stops.push(() => stopProc(sim.proc));
    const serverBase = (url: string) => url.replace(/\/v1$/, '');

    const groupsPerUpdate = groupsPerUpdateOf(o);
    const instances = join(dir, 'instances.jsonl');
    writeInstances(instances, groupsPerUpdate * o.updates);
    const prefix = 'fleet';
    const perWorker = Math.ceil(o.inFlight / o.workers);
    const config = {
      runName: 'fleet',
      runDir: join(dir, 'runs'),
      seed: o.seed,
      data: { instances: [instances], userStates: join(dir, 'none.jsonl') },
      policy: { server: 'external', baseUrl: policy.url, model: 'models/toy', timeoutMs: 600_000, maxRetries: 2 },
      simulator: { timeoutMs: o.simTimeoutMs, maxRetries: 4, concurrency: perWorker },
      rollout: { groupSize: o.groupSize, workers: o.workers, concurrency: perWorker },
      grpo: { groupsPerUpdate, maxUpdates: o.updates, maxPolicyLag: o.lag, passes: 1, learningRate: 0.05, groupDeadlineMs: o.deadlineMs },
      checkpoint: { every: 4, keep: 2 },
      queues: { redisUrl, prefix },
      ...(o.orchestrator ? { orchestrator: o.orchestrator } : {}),
    };
    const configFile = join(dir, 'config.yaml');
    writeFileSync(configFile, stringify(config));
    const env = {
      ...process.env,
      GSTEER_PARTS: 'synthetic',
      GSTEER_SYNTHETIC_TURNS: String(o.maxTurns),
      GSTEER_SYNTHETIC_TOKENS: String(o.tokensPerTurn),
      GSTEER_SYNTHETIC_SIMULATOR_URL: sim.url,
      GSTEER_SYNTHETIC_TRAIN_MS: String(o.trainMs),
    };
    const runDir = join(dir, 'runs', 'fleet');
    const samples: Sample[] = [];
    const benchPid = process.pid;
    const roles = new Map<number, string>([
      [policy.proc.pid!, 'policy endpoint'],
      [sim.proc.pid!, 'simulator endpoint'],
      [benchPid, 'bench'],
    ]);
    const redisPids = (await Promise.all(redisPorts.map((p) => redisSample(p)))).map((s) => s.pid);
    for (const pid of redisPids) roles.set(pid, 'redis');
    let train: ChildProcess | null = null;
    /** CPU of dead processes (a killed run's workers) stays counted. */
    const gone: Record<string, number> = {};
    const last = new Map<number, number>();
    const sample = async () => {
      if (train?.pid) {
        if (!roles.has(train.pid)) roles.set(train.pid, 'controller');
        for (const c of children(train.pid)) if (!roles.has(c.pid)) roles.set(c.pid, roleOf(c.cmd));
      }
      const cpu: Record<string, number> = { ...gone };
      for (const [pid, role] of roles) {
        const s = cpuSeconds(pid);
        if (s === 0 && last.has(pid)) {
          gone[role] = (gone[role] ?? 0) + last.get(pid)!;
          cpu[role] = (cpu[role] ?? 0) + last.get(pid)!;
          roles.delete(pid);
          last.delete(pid);
          continue;
        }
        if (s > 0) last.set(pid, s);
        cpu[role] = (cpu[role] ?? 0) + s;
      }
      const rs = await Promise.all(redisPorts.map((p) => redisSample(p).catch(() => ({ usedMemory: 0, commands: 0, pid: 0, byCommand: {} }))));
      const redisByCommand: Record<string, number> = {};
      for (const r of rs) for (const [k, n] of Object.entries(r.byCommand)) redisByCommand[k] = (redisByCommand[k] ?? 0) + n;
      const ps = await getJson<{ batching?: BatchStats }>(`${serverBase(policy.url)}/stats`);
      const ss = await getJson<SimulatorStats>(`${serverBase(sim.url)}/stats`);
      samples.push({
        t: Date.now(),
        cpu,
        redisMemory: rs.reduce((n, r) => n + r.usedMemory, 0),
        redisCommands: rs.reduce((n, r) => n + r.commands, 0),
        redisByCommand,
        inFlight: watch.inFlight(),
        load1: loadavg()[0]!,
        ...(ps?.batching ? { policy: ps.batching } : {}),
        ...(ss ? { simulator: ss } : {}),
      });
    };
    const launch = (args: string[]) => {
      const p = spawn(process.execPath, [CLI, ...args], { cwd: REPO, env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
      const done = new Promise<number | null>((resolve) => p.on('exit', (code) => resolve(code)));
      return { p, done, err: () => err };
    };
    o.log(
      `${o.name}: ${o.inFlight} in flight = ${o.workers} rollout workers x ${perWorker}; admission window ${o.window} x ${o.inFlight}: updates of ${groupsPerUpdate} groups x ${o.groupSize}, lag ${o.lag}, ${o.updates} updates; redis ${o.cluster ? 'cluster (3 masters)' : 'single'}`,
    );
    let run = launch(['train', '--config', configFile]);
    train = run.p;
    // The run's keys are under its run id (run.json, written before the queues are used).
    const runJson = join(runDir, 'run.json');
    for (let i = 0; !existsSync(runJson); i++) {
      if (i > 600 || run.p.exitCode !== null) throw new Error(`${o.name}: gsteer train wrote no ${runJson}: ${run.err()}`);
      await sleep(100);
    }
    const watch = new QueueWatch(() => connect(redisUrl), queuePrefix(prefix, readRunInfo(runLayout(runDir)).runId));
    await watch.start();
    stops.push(() => watch.close());
    let killed: LegResult['killed'];
    let exitCode: number | null = null;
    for (;;) {
      const code = await Promise.race([run.done, sleep(1000).then(() => 'tick' as const)]);
      await sample();
      if (code !== 'tick') {
        exitCode = code;
        break;
      }
      if (o.killAfter !== undefined && !killed && readMetrics(join(runDir, 'metrics.jsonl')).length >= o.killAfter) {
        const inFlight = watch.inFlight();
        // Every process of the run at once, as a machine crash would (the workers have their own process groups).
        for (const c of children(run.p.pid!)) process.kill(c.pid, 'SIGKILL');
        process.kill(-run.p.pid!, 'SIGKILL');
        await run.done;
        killed = { at: Date.now(), inFlight, resumeExit: null };
        o.log(`${o.name}: SIGKILL of the whole run with ${inFlight} episodes in flight; gsteer resume`);
        run = launch(['resume', runDir]);
        train = run.p;
      }
    }
    if (killed) killed.resumeExit = exitCode;
    if (exitCode !== 0) o.log(`${o.name}: gsteer exited ${exitCode}: ${run.err()}`);
    await sample();
    return { runDir, metrics: readMetrics(join(runDir, 'metrics.jsonl')), samples, watch, exitCode, ...(killed ? { killed } : {}) };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}
