// Start a run's processes and drive it: Redis (local one if needed), the policy server
// (embedded child or external), the trainer service (trainer.engine embedded: `gsteer trainer
// serve`, method §5.13), the trainer / group / rollout workers as child processes,
// then the controller until done, stopped (SIGINT/SIGTERM) or failed. Used by `gsteer
// train` and `gsteer resume`, which hold the run directory's lock (checkpoints/run-lock.ts).
// The run's queues are its own (checkpoints/run-keys.ts) and claimed before they are cleared
// (queue-owner.ts): a launch never obliterates queues another live process uses. The
// embedded policy server gets a random API key, passed to it and to the workers by
// environment (policy.apiKeyEnv), and loads adapters only from the run directory.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import type { RunLayout } from '../checkpoints/layout.ts';
import type { RunConfig } from '../configs/schema.ts';
import type { UserState } from '../data/schema.ts';
import type { EnvInstance } from '../rollout/env/types.ts';
import { metricsSink, readMetrics, type MetricsRecord } from '../monitor/sink.ts';
import { summaryTable } from '../monitor/summary.ts';
import { updateLines, type UpdateLines } from '../monitor/train-lines.ts';
import { RunController, type Outcome } from './controller.ts';
import { loadParts } from './load-parts.ts';
import { waitForPolicyServer, waitForTrainerService } from './policy-admin.ts';
import { EMBEDDED_KEY_ENV } from '../trainer/update/engine-states.ts';
import { connect } from '../util/redis.ts';
import { metricsStreamKey, QUEUE, queuePrefix } from '../checkpoints/run-keys.ts';
import { claimQueues, type QueueClaim } from './queue-owner.ts';
import { ensureRedis } from './redis-local.ts';
import { removeRunKeys } from './run-redis.ts';
import { reclaimJobs } from './reclaim.ts';
import { writeRunInfo, type RunInfo } from '../checkpoints/run-info.ts';
import { Supervisor } from './supervisor.ts';
import { newestVersion } from './trainer-worker.ts';

export interface LaunchOptions {
  cfg: RunConfig;
  layout: RunLayout;
  info: RunInfo;
  instances: EnvInstance[];
  /** Fresh run: the initial user states; resume: the checkpoint's dumped records. */
  userStates: { kind: 'init'; states: UserState[] } | { kind: 'restore'; records: unknown[] };
  startStep: number;
  /** Restarts per child process before the run stops (default 3). */
  maxRestarts?: number;
}

/** The CLI's one entry point; it registers the TypeScript loader itself. */
const CLI = fileURLToPath(new URL('../cli/gsteer.mjs', import.meta.url));
const SYNTH_SERVER = fileURLToPath(new URL('./synthetic/server-main.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');
const GUARD = new URL('./child-guard.mjs', import.meta.url).href;
/** node flags of every child: the parent-death guard. */
const NODE_ARGS = ['--import', GUARD];
/** A .ts script run directly (not through the CLI) also needs tsx. */
const TS_NODE_ARGS = ['--import', TSX, ...NODE_ARGS];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The policy server's API key from the environment (the embedded one's is set below). */
const policyKey = (cfg: RunConfig) => (process.env[cfg.policy.apiKeyEnv] ? { apiKey: process.env[cfg.policy.apiKeyEnv] as string } : {});

export async function launchRun(o: LaunchOptions): Promise<number> {
  const { cfg, layout } = o;
  let lines: UpdateLines | null = null; // per-update lines and the bar, once the first update lands
  const log = (msg: string) => (lines ? lines.note(`gsteer: ${msg}`) : console.error(`gsteer: ${msg}`));
  const redisProc = await ensureRedis(cfg.queues.redisUrl, log, `${o.info.runId}@${hostname()}:${process.pid}`);
  let giveUp: string | null = null;
  let controller: RunController | null = null;
  let rejectDied: (e: Error) => void = () => {};
  // Rejects when a child cannot be kept alive, so no wait below outlives a dead server.
  const died = new Promise<never>((_, reject) => (rejectDied = reject));
  died.catch(() => undefined);
  const sup = new Supervisor(
    o.maxRestarts ?? 3,
    log,
    (msg) => {
      giveUp = msg;
      rejectDied(new Error(msg));
      controller?.abort(msg);
    },
    (name, pid) => {
      if (!cfg.queues.reclaim) return;
      void reclaimJobs(redis, cfg.queues.prefix, o.info.runId, pid).then(
        (ids) => ids.length && log(`${name}: returned ${ids.length} job(s) it held to the queue (${ids.join(', ')})`),
        (e: Error) => log(`${name}: could not return its jobs (${e.message}); they are retried when their locks expire`),
      );
    },
  );
  const redis = connect(cfg.queues.redisUrl);
  let claim: QueueClaim | null = null;
  const parts = await loadParts(cfg, o.info.runId);
  const users = await parts.users();
  try {
    // Before anything starts: the queues are this run's alone (a copy of the run directory, or workers started by hand, would share them).
    claim = await claimQueues(redis, cfg.queues.prefix, o.info.runId, layout.root);
    // Policy server.
    let policyUrl = cfg.policy.baseUrl ?? '';
    if (cfg.policy.server === 'embedded') {
      const port = cfg.policy.port || (await freePort());
      // A key of its own, in the environment every child inherits (never argv: ps shows it).
      process.env[cfg.policy.apiKeyEnv] = randomBytes(24).toString('hex');
      const args =
        parts.kind === 'synthetic'
          ? [...TS_NODE_ARGS, SYNTH_SERVER, '--port', String(port), '--latency-ms', process.env.GSTEER_SYNTHETIC_LATENCY_MS ?? '0']
          : [
              ...NODE_ARGS,
              CLI,
              'serve',
              '--model',
              cfg.policy.model,
              '--port',
              String(port),
              '--backend',
              cfg.trainer.backend,
              '--api-key-env',
              cfg.policy.apiKeyEnv,
              '--lora-root',
              layout.root,
            ];
      sup.start({ name: 'policy-server', args, logFile: layout.log('policy-server') });
      policyUrl = `http://127.0.0.1:${port}/v1`;
      // Model loading takes a while: poll longer than for an external server.
      await Promise.race([waitForPolicyServer(policyUrl, { maxRetries: 1200, baseDelayMs: 250, fixedDelay: true, timeoutMs: 5000, ...policyKey(cfg) }), died]);
    } else {
      await waitForPolicyServer(policyUrl, { maxRetries: cfg.policy.maxRetries, timeoutMs: cfg.policy.timeoutMs, ...policyKey(cfg) });
    }
    // Trainer service (method §5.13): gsteer's tfjs engine behind the Tinker API, as the policy server is started.
    let trainerUrl: string | null = null;
    if (parts.kind === 'real' && cfg.trainer.engine === 'embedded' && cfg.algorithm === 'grpo') {
      const port = cfg.trainer.port || (await freePort());
      process.env[EMBEDDED_KEY_ENV] = randomBytes(24).toString('hex'); // as the policy server's: the service answers this run's workers only
      const args = [
        ...NODE_ARGS,
        CLI,
        'trainer',
        'serve',
        '--model',
        cfg.policy.model,
        '--port',
        String(port),
        '--backend',
        cfg.trainer.backend,
        '--state-dir',
        layout.trainerService,
        '--api-key-env',
        EMBEDDED_KEY_ENV,
        '--micro-batch-size',
        String(cfg.grpo.microBatchSize),
        ...(cfg.grpo.gradientCheckpointing ? ['--recompute'] : []),
        '--no-sampler',
        '--session-timeout-s',
        '0',
      ];
      sup.start({ name: 'trainer-service', args, logFile: layout.log('trainer-service') });
      trainerUrl = `http://127.0.0.1:${port}`;
      await Promise.race([waitForTrainerService(trainerUrl), died]);
    }
    // only the URL of the server gsteer started: an external one's (it may carry a key) comes from the config
    writeRunInfo(layout, { ...o.info, policyUrl: cfg.policy.server === 'embedded' ? policyUrl : null, trainerUrl });
    // The queues are claimed: clear what an earlier epoch of this run left.
    for (const name of Object.values(QUEUE)) {
      const q = new Queue(name, { connection: redis, prefix: queuePrefix(cfg.queues.prefix, o.info.runId) });
      await q.obliterate({ force: true });
      await q.close();
    }
    if (o.userStates.kind === 'init') await users.init(o.userStates.states);
    else await users.restore(o.userStates.records);
    // Workers.
    const worker = (kind: string, i = 0) =>
      sup.start({ name: `${kind}-${i}`, args: [...NODE_ARGS, CLI, 'worker', kind, '--run', layout.root], logFile: layout.log(`${kind}-${i}`) });
    worker('trainer');
    worker('group');
    for (let i = 0; i < cfg.rollout.workers; i++) worker('rollout', i);
    // The trainer restores (or writes) the adapter version the run starts from.
    for (let t = 0; (newestVersion(layout.adapters) ?? -1) < o.startStep; t++) {
      if (giveUp) throw new Error(giveUp);
      if (t > 3000) throw new Error(`the trainer did not write adapter version ${o.startStep} within 10 minutes; see ${layout.log('trainer-0')}`);
      await sleep(200);
    }
    const sink = metricsSink(layout.metrics, redis, metricsStreamKey(cfg.queues.prefix, o.info.runId));
    controller = new RunController({
      cfg,
      layout,
      info: o.info,
      instances: o.instances,
      users,
      redis,
      sink,
      policyUrl,
      startStep: o.startStep,
      log,
      onUpdate: (rec: MetricsRecord, total: number) => {
        lines ??= updateLines(o.startStep, total);
        lines.update(rec);
      },
    });
    let signals = 0;
    const onSignal = (sig: string) => {
      signals++;
      log(signals === 1 ? `${sig}: no new updates; finishing the admitted ones, then checkpoint (again to stop now)` : `${sig}: stopping now`);
      if (signals === 1) controller?.stop();
      else controller?.abort(`stopped by ${sig}`);
    };
    const onInt = () => onSignal('SIGINT');
    const onTerm = () => onSignal('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    let outcome: Outcome;
    try {
      outcome = await controller.run();
    } finally {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    }
    (lines as UpdateLines | null)?.done();
    lines = null; // later messages go below the finished bar
    console.log(summaryTable(readMetrics(layout.metrics)));
    console.log(`\nrun directory: ${layout.root}`);
    if (outcome.kind === 'done') console.log(`done: ${outcome.step} update(s)`);
    else
      console.error(
        `gsteer: ${outcome.kind} at update ${outcome.step} of ${outcome.total}${outcome.message ? `: ${outcome.message}` : ''}; continue with gsteer resume ${layout.root}`,
      );
    return outcome.kind === 'failed' ? 1 : 0;
  } finally {
    await sup.stopAll();
    await users.close();
    // Everything durable is in the run directory (resume needs nothing else): drop the run's
    // keys, only when they were ours (a refused claim leaves the owner's alone).
    if (claim)
      await Promise.race([
        removeRunKeys(redis, cfg.queues.prefix, o.info.runId),
        sleep(10_000).then(() => Promise.reject(new Error('Redis did not answer within 10 s'))),
      ]).catch((e: Error) => log(`could not remove the run's Redis keys (${e.message}); gsteer clean ${layout.root} does it later`));
    await claim?.release();
    redis.disconnect();
    await redisProc.stop();
  }
}
