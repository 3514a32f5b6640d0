// Fault drill of the trainer service (issue 31 item 6; not part of `npm test`): the demo config
// (real model, embedded policy server, `gsteer trainer serve` started by gsteer, local Redis),
// SIGKILL of the trainer service while the trainer trains update K through it, and the time from
// the kill to update K trained: the supervisor restarts the service on the same port, the trainer
// part finds its model gone, opens a new session, loads the last version's state and runs the
// update again. Legs, one after the other so they do not share the CPU:
//   ref   no kill: the metrics and adapter bytes the other leg must repeat
//   kill  SIGKILL of the service during update K
// Run: node --import tsx bench/trainer/service-fault-drill.ts [--updates 6] [--kill-at 4] [--config configs/demo.yaml] [--keep]
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readMetrics } from '../../monitor/sink.ts';
import { reproducible } from '../../workers/update-metrics.ts';
import { runLayout } from '../../checkpoints/layout.ts';

const { values } = parseArgs({ options: { updates: { type: 'string', default: '6' }, 'kill-at': { type: 'string', default: '4' }, config: { type: 'string', default: 'configs/demo.yaml' }, keep: { type: 'boolean', default: false } } });
const updates = Number(values.updates);
const killAt = Number(values['kill-at']);
if (!(killAt >= 2 && killAt <= updates)) throw new Error(`--kill-at ${killAt}: expected 2..--updates (${updates})`);
const REPO = new URL('../..', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'gsteer-service-drill-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `[ISO] trainer: msg` lines of the trainer log with their times (ms). */
function trainerLines(runDir: string): { t: number; msg: string }[] {
  const f = join(runDir, 'logs', 'trainer-0.log');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8').split('\n').flatMap((l) => {
    const m = /^\[([^\]]+)\] trainer: (.*)$/.exec(l);
    return m ? [{ t: Date.parse(m[1]!), msg: m[2]! }] : [];
  });
}

/** The pid of the run's trainer service: the child of `gsteer train` (pid) running `trainer serve`. */
function servicePid(trainPid: number): number | null {
  let out: string;
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(trainPid)], { encoding: 'utf8' });
  } catch {
    return null; // ps exits 1 when the process has no children yet
  }
  const line = out.split('\n').find((l) => / trainer serve /.test(l));
  return line ? Number(line.trim().split(/\s+/)[0]) : null;
}

interface Result { name: string; runDir: string; seconds: number; recovery?: { total: number; restart: number; train: number } }

async function leg(name: string, kill: boolean): Promise<Result> {
  const runName = `drill-${name}`;
  const args = [join(REPO, 'cli/gsteer.mjs'), 'train', '--config', values.config, '--set', `grpo.maxUpdates=${updates}`, '--set', `runName=${runName}`, '--set', `runDir=${root}`, '--set', `queues.prefix=gsteer-sdrill-${process.pid}-${name}`, '--set', 'checkpoint.every=3', '--set', 'trainer.engine=embedded'];
  const t0 = Date.now();
  const proc = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const runDir = join(root, runName);
  const training = new RegExp(`^update ${killAt}: training`);
  let killedAt: number | null = null;
  while (kill && killedAt === null) {
    if (proc.exitCode !== null) throw new Error(`${name}: the run ended before update ${killAt} trained:\n${stderr.slice(-2000)}`);
    const pid = servicePid(proc.pid!);
    if (pid && trainerLines(runDir).some((l) => training.test(l.msg))) {
      await sleep(1000); // inside the update's calls, not at its start
      process.kill(pid, 'SIGKILL');
      killedAt = Date.now();
      console.error(`${name}: SIGKILL trainer service (pid ${pid}) during update ${killAt}`);
    } else await sleep(100);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`${name}: gsteer train exited ${code}:\n${stderr.slice(-2000)}`);
  const res: Result = { name, runDir, seconds: (Date.now() - t0) / 1000 };
  if (killedAt !== null) {
    const lines = trainerLines(runDir);
    const done = lines.find((l) => l.t >= killedAt! && new RegExp(`^update ${killAt}: \\d+ group\\(s\\), loss`).test(l.msg));
    const reloaded = lines.find((l) => l.t >= killedAt! && /the trainer engine lost model/.test(l.msg));
    if (!done || !reloaded) throw new Error(`${name}: no recovery of update ${killAt} in the trainer log`);
    res.recovery = { total: (done.t - killedAt) / 1000, restart: (reloaded.t - killedAt) / 1000, train: (done.t - reloaded.t) / 1000 };
    console.error(`${name}: ${reloaded.msg}`);
  }
  return res;
}

const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
const repro = (runDir: string) => JSON.stringify(readMetrics(join(runDir, 'metrics.jsonl')).map(reproducible));
const rewards = (runDir: string) => readMetrics(join(runDir, 'metrics.jsonl')).map((m) => Number(m.reward));
const adapterSha = (runDir: string) => sha(join(runLayout(runDir).adapter(updates), 'adapter_model.safetensors'));

console.log(`trainer service fault drill: ${values.config}, ${updates} updates, SIGKILL of gsteer trainer serve during update ${killAt}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const results: Result[] = [];
for (const [name, kill] of [['ref', false], ['kill', true]] as const) {
  results.push(await leg(name, kill));
  console.error(`${name}: done in ${results.at(-1)!.seconds.toFixed(0)} s`);
}
const ref = results[0]!;
const f = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(1));
console.log(`\n| leg | kill -> update ${killAt} trained s | kill -> model reloaded s | reloaded -> trained s | run s | rewards = ref | metrics = ref | adapter sha256 (v${updates}) | = ref |`);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  const a = adapterSha(r.runDir);
  console.log(`| ${r.name} | ${f(r.recovery?.total)} | ${f(r.recovery?.restart)} | ${f(r.recovery?.train)} | ${r.seconds.toFixed(0)} | ${JSON.stringify(rewards(r.runDir)) === JSON.stringify(rewards(ref.runDir)) ? 'yes' : 'NO'} | ${repro(r.runDir) === repro(ref.runDir) ? 'yes' : 'NO'} | ${a.slice(0, 16)} | ${a === adapterSha(ref.runDir) ? 'yes' : 'NO'} |`);
}
console.log(`\nrewards per update (ref): ${rewards(ref.runDir).map((x) => x.toFixed(4)).join(' ')}`);
console.log(`load average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}; run directories under ${root}${values.keep ? '' : ' (removed; --keep keeps them)'}`);
if (!values.keep) rmSync(root, { recursive: true, force: true });
