// The Tinker contract's cost per update (issue 31), in one run, side by side on the same update
// batches: the demo's real updates (a run's group files, one group per update as configs/demo.yaml),
// the committed demo model, the demo config. Paths, alternating per update:
//   in-process   trainer.engine inprocess: the train step in this process (trainer/update/step-part.ts)
//   HTTP         trainer.engine embedded: the same update through the Tinker API to `gsteer trainer
//                serve` in a child process (trainer/update/contract-part.ts; the stale-adapter check off)
//   HTTP + check the same with the stale-adapter check on 2 turns (trainer.samplerCheck, the default)
// Each path's update = the step (mask replay, forward, backward, AdamW) and the version save the
// trainer worker does after it. The two trainers start from the same fresh LoRA and stay equal (the
// contract's gradient is the step's to the bit), so every update is the same work on each path.
// Overhead = HTTP - in-process, as a share of the HTTP update (noisy on a loaded machine: two updates
// apart), and within each HTTP update the calls' wall time less the engine's own compute (the
// service reports it per call): the contract's cost measured under the same load. Not part of npm test.
//
//   node --import tsx bench/trainer/contract.ts --run runs/demo [--updates 4] [--backend wasm]
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { readGroupFile } from '../../checkpoints/group-file.ts';
import { runLayout } from '../../checkpoints/layout.ts';
import { buildUpdateBatch } from '../../workers/update-batch.ts';
import { contractTrainerPart } from '../../trainer/update/contract-part.ts';
import { stepTrainerPart } from '../../trainer/update/step-part.ts';
import type { TrainerPart, TrainSequence } from '../../trainer/update/part.ts';
import { StaleAdapterError } from '../../trainer/update/sampler-check.ts';
import { EVERY_GRAMMAR } from '../../rollout/env/grammars.ts';

const { values } = parseArgs({
  options: {
    run: { type: 'string', default: 'runs/demo' },
    updates: { type: 'string', default: '4' },
    backend: { type: 'string', default: 'wasm' },
    config: { type: 'string', default: 'configs/demo.yaml' },
  },
});
const REPO = new URL('../..', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'gsteer-contract-bench-'));

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

async function startService(cfgModel: string, micro: number): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [
      join(REPO, 'cli/gsteer.mjs'),
      'trainer',
      'serve',
      '--model',
      cfgModel,
      '--port',
      String(port),
      '--backend',
      values.backend!,
      '--state-dir',
      join(root, 'service'),
      '--micro-batch-size',
      String(micro),
      '--no-sampler',
      '--session-timeout-s',
      '0',
    ],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => String(d).includes('listening on') && resolve());
    proc.on('exit', (code) => reject(new Error(`gsteer trainer serve exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}

const cfgFor = (engine: string, checkTurns: number) =>
  loadConfig(
    [values.config!],
    [`trainer.engine=${engine}`, `trainer.backend=${values.backend}`, `trainer.samplerCheck.turns=${checkTurns}`, 'runName=contract-bench'],
  );
const base = cfgFor('inprocess', 0);
const layout = runLayout(values.run!);
const files = readdirSync(join(values.run!, 'groups'))
  .filter((f) => f.endsWith('.json'))
  .sort()
  .slice(0, Number(values.updates));
if (!files.length) throw new Error(`${values.run}/groups has no group files; pass --run with a demo run's directory (npm run demo writes runs/demo)`);
const batches: TrainSequence[][] = files.map((f) => buildUpdateBatch([readGroupFile(join(values.run!, 'groups', f))], layout, base.grpo).sequences);

const svc = await startService(base.policy.model, base.grpo.microBatchSize);
process.on('exit', () => svc.proc.kill('SIGKILL')); // the service child never outlives the bench
interface PathRun {
  name: string;
  part: TrainerPart;
  dirs: string;
}
const versionDir = (dirs: string) => (v: number) => join(dirs, `policy-v${String(v).padStart(6, '0')}`);
async function path(name: string, engine: 'inprocess' | 'embedded', checkTurns: number): Promise<PathRun> {
  const cfg = cfgFor(engine, checkTurns);
  const dirs = join(root, name.replace(/\W+/g, '-'));
  const part =
    engine === 'inprocess'
      ? await stepTrainerPart(cfg, () => files.length, EVERY_GRAMMAR)
      : await contractTrainerPart({
          cfg,
          runId: `bench-${name.replace(/\W+/g, '-')}`,
          totalSteps: () => files.length,
          baseUrl: svc.url,
          baseModel: cfg.policy.model,
          embedded: { stateDir: join(root, 'service') },
          callsFile: join(dirs, 'trainer_calls.jsonl'),
          versionDir: versionDir(dirs),
          log: () => {},
        });
  await part.init(null);
  mkdirSync(versionDir(dirs)(0), { recursive: true });
  await part.save(versionDir(dirs)(0));
  return { name, part, dirs };
}
const paths = [await path('in-process', 'inprocess', 0), await path('HTTP', 'embedded', 0), await path('HTTP + check', 'embedded', 2)];

interface Cell {
  step: number;
  save: number;
  calls?: number;
  sent?: number;
  received?: number;
  engine?: number;
  overhead?: number;
}
const cells: Cell[][] = paths.map(() => []);
console.error(
  `contract bench: ${files.length} update(s) of ${values.run}, backend ${values.backend}, load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (let u = 0; u < batches.length; u++) {
  // rollouts sampled by the version before (lag 0): the stale check has a version to compare
  const batch = batches[u]!.map((s) => ({ ...s, policyVersion: u }));
  for (const [i, p] of paths.entries()) {
    const t0 = performance.now();
    // replayed batches were sampled by another run's adapters: the stale check's verdict means nothing here, its cost does
    const stats = await p.part.step(batch, u + 1).catch((e: Error) => {
      if (!(e instanceof StaleAdapterError)) throw e;
      return { diagnostics: {} as Record<string, number> };
    });
    const t1 = performance.now();
    mkdirSync(versionDir(p.dirs)(u + 1), { recursive: true });
    await p.part.save(versionDir(p.dirs)(u + 1));
    const t2 = performance.now();
    const d = stats.diagnostics ?? {};
    cells[i]!.push({
      step: (t1 - t0) / 1000,
      save: (t2 - t1) / 1000,
      calls: d['trainer/calls'],
      sent: d['trainer/bytes_sent'],
      received: d['trainer/bytes_received'],
      engine: d['trainer/engine_seconds'],
      overhead: d['trainer/overhead_seconds'],
    });
    console.error(`update ${u + 1} ${p.name}: step ${((t1 - t0) / 1000).toFixed(2)} s, save ${((t2 - t1) / 1000).toFixed(2)} s`);
  }
}
const sha = (p: PathRun) =>
  createHash('sha256')
    .update(readFileSync(join(versionDir(p.dirs)(files.length), 'adapter_model.safetensors')))
    .digest('hex')
    .slice(0, 16);
const total = (c: Cell) => c.step + c.save;
console.log(`\n| update | turns | in-process s | HTTP s | overhead s | overhead share | HTTP + check s | check share | calls | bytes sent / received |`);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (let u = 0; u < batches.length; u++) {
  const [a, b, c] = [cells[0]![u]!, cells[1]![u]!, cells[2]![u]!];
  const over = total(b) - total(a);
  console.log(
    `| ${u + 1} | ${batches[u]!.length} | ${total(a).toFixed(2)} | ${total(b).toFixed(2)} | ${over.toFixed(2)} | ${((100 * over) / total(b)).toFixed(1)}% | ${total(c).toFixed(2)} | ${((100 * (total(c) - total(b))) / total(c)).toFixed(1)}% | ${b.calls ?? '-'} | ${b.sent ?? '-'} / ${b.received ?? '-'} |`,
  );
}
const sum = (i: number) => cells[i]!.slice(1).reduce((s, c) => s + total(c), 0); // update 1 warms up
if (batches.length > 1) {
  const over = sum(1) - sum(0);
  console.log(
    `| 2..${batches.length} | | ${sum(0).toFixed(2)} | ${sum(1).toFixed(2)} | ${over.toFixed(2)} | ${((100 * over) / sum(1)).toFixed(1)}% | ${sum(2).toFixed(2)} | ${((100 * (sum(2) - sum(1))) / sum(2)).toFixed(1)}% | | |`,
  );
}
// Within each HTTP update (the same update, so the same machine load): the engine's compute of its
// forward_backward and optim_step (the service's own clock) and the rest of those calls' wall time.
console.log(`\n| update | HTTP calls' wall s | engine compute s | contract overhead s | share of the calls' wall |`);
console.log('|---|---|---|---|---|');
const shares: number[] = [];
cells[1]!.forEach((c, u) => {
  if (c.engine === undefined || c.overhead === undefined) return;
  const wall = c.engine + c.overhead;
  shares.push(c.overhead / wall);
  console.log(`| ${u + 1} | ${wall.toFixed(2)} | ${c.engine.toFixed(2)} | ${c.overhead.toFixed(3)} | ${((100 * c.overhead) / wall).toFixed(1)}% |`);
});
if (shares.length)
  console.log(`median contract overhead: ${(100 * [...shares].sort((a, b) => a - b)[Math.floor(shares.length / 2)]!).toFixed(1)}% of the update's calls`);
if (batches.length > 2) {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const share = (i: number, j: number) =>
    med(cells[0]!.slice(1).map((_, u) => (total(cells[i]![u + 1]!) - total(cells[j]![u + 1]!)) / total(cells[i]![u + 1]!)));
  console.log(
    `\nmedian over updates 2..${batches.length}: HTTP overhead ${(100 * share(1, 0)).toFixed(1)}% of the HTTP update; the stale check ${(100 * share(2, 1)).toFixed(1)}% of the checked update`,
  );
}
console.log(`\nadapter sha256 after update ${files.length}: ${paths.map((p) => `${p.name} ${sha(p)}`).join(', ')}`);
console.log(
  `load average at the end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const p of paths) await p.part.close?.();
svc.proc.kill('SIGTERM');
rmSync(root, { recursive: true, force: true });
