// Shared by the end-to-end tests: a tiny valid dataset, a run config with a unique queue
// prefix, the CLI as a real child process (own process group, so a test can SIGKILL the
// whole run), and cleanup of exactly the Redis keys a test created.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { deletePrefixedKeys } from '../../util/redis.ts';
import { adapterDirName } from '../../checkpoints/layout.ts';
import { stringify } from 'yaml';
import { reproducible } from '../../workers/update-metrics.ts';
import { readMetrics } from '../../monitor/sink.ts';

export const REPO = new URL('../..', import.meta.url).pathname;
const CLI = join(REPO, 'cli/gsteer.mjs');

export function instance(k: number, split = 'train') {
  return {
    id: `inst-${k}`,
    userId: `user-${k}`,
    taskId: `task-${k % 2}`,
    split,
    query: `Research question number ${k} about travel plans`,
    profile: '',
    persona: [`person ${k}`],
    targets: [{ id: 'budget', description: 'the budget', seedQuestion: 'What is your budget?', seedAnswer: `${k}00 euros`, weight: 1, essential: true }],
    edges: [],
  };
}

export function tempRun(name: string): { dir: string; prefix: string; instances: string } {
  const dir = mkdtempSync(join(tmpdir(), `gsteer-e2e-${name}-`));
  const instances = join(dir, 'instances.jsonl');
  writeFileSync(
    instances,
    [0, 1, 2, 3, 4, 5]
      .map((k) => JSON.stringify(instance(k)))
      .concat(JSON.stringify(instance(9, 'test')))
      .join('\n') + '\n',
  );
  return { dir, prefix: `gsteer-test:e2e-${name}:${randomBytes(4).toString('hex')}`, instances };
}

export function writeConfig(dir: string, cfg: Record<string, unknown>): string {
  const file = join(dir, `config-${randomBytes(3).toString('hex')}.yaml`);
  writeFileSync(file, stringify(cfg));
  return file;
}

/** The synthetic-parts config used by the e2e runs (overrides on top of the paper defaults). */
export function e2eConfig(t: { dir: string; prefix: string; instances: string }, runName: string, over: Record<string, unknown> = {}) {
  const base: Record<string, unknown> = {
    runName,
    runDir: join(t.dir, 'runs'),
    seed: 7,
    data: { instances: [t.instances], userStates: join(t.dir, 'none.jsonl') },
    policy: { server: 'embedded', model: 'models/toy' },
    rollout: { groupSize: 4, workers: 1, concurrency: 4 },
    grpo: { maxUpdates: 4, learningRate: 0.1, groupsPerUpdate: 2, maxPolicyLag: 0 },
    checkpoint: { every: 2, keep: 3 },
    queues: { prefix: t.prefix, backoffMs: 200 },
  };
  for (const [k, v] of Object.entries(over)) base[k] = typeof v === 'object' && v && !Array.isArray(v) ? { ...(base[k] as object), ...v } : v;
  return base;
}

export interface CliRun {
  proc: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

export function cli(args: string[], env: Record<string, string> = {}): CliRun {
  const proc = spawn(process.execPath, [CLI, ...args], {
    cwd: REPO,
    env: { ...process.env, GSTEER_PARTS: 'synthetic', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d) => (stdout += d));
  proc.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { proc, done };
}

/** SIGKILL the whole run: the CLI process and every child it started. */
export function killRun(run: CliRun): void {
  try {
    process.kill(-(run.proc.pid as number), 'SIGKILL');
  } catch {
    // already gone
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

export const metricLines = (runDir: string) =>
  existsSync(join(runDir, 'metrics.jsonl')) ? readFileSync(join(runDir, 'metrics.jsonl'), 'utf8').split('\n').filter(Boolean).length : 0;

/** metrics.jsonl without the wall-clock fields: what must repeat exactly. */
export function reproducibleMetrics(runDir: string) {
  return readMetrics(join(runDir, 'metrics.jsonl')).map(reproducible);
}

export const adapterBytes = (runDir: string, v: number) => readFileSync(join(runDir, 'adapters', adapterDirName(v), 'adapter_model.safetensors'));

/** pid from a worker log's "started (... pid N)" line (the newest one). */
export function workerPid(runDir: string, name: string): number | null {
  const f = join(runDir, 'logs', `${name}.log`);
  if (!existsSync(f)) return null;
  const m = [...readFileSync(f, 'utf8').matchAll(/started \(.*pid (\d+)\)/g)].pop();
  return m ? Number(m[1]) : null;
}

export const logText = (runDir: string, name: string) => {
  const f = join(runDir, 'logs', `${name}.log`);
  return existsSync(f) ? readFileSync(f, 'utf8') : '';
};

/** afterAll of a test file: the Redis keys and the temp folders of exactly its runs. */
export async function removeRuns(...runs: { dir: string; prefix: string }[]): Promise<void> {
  for (const t of runs) {
    await deletePrefixedKeys(t.prefix);
    rmSync(t.dir, { recursive: true, force: true });
  }
}

export function mkdirp(d: string): string {
  mkdirSync(d, { recursive: true });
  return d;
}
