// `gsteer train`: validate config, dataset, model and endpoints, then start Redis (if
// needed), the policy server, the workers and the controller for one GRPO run
// (workers/launch.ts), holding the run directory's lock (checkpoints/run-lock.ts). A run that
// fails to start (before its first update is recorded) leaves no run directory behind:
// the failure and the end of the failing child's log are printed instead.
import { existsSync, rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../configs/load.ts';
import { sftPhase } from '../demo/sft-phase.ts';
import { InputError, TransientError } from '../../util/errors.ts';
import { launchRun } from '../../workers/launch.ts';
import { waitForPolicyServer } from '../../workers/policy-admin.ts';
import { redisProblem } from '../../workers/redis-local.ts';
import { createRunDir, newRunLayout, validateRunInputs } from '../../workers/prepare.ts';
import { trainDashboard } from '../../monitor/dashboard/beside-run.ts';
import { acquireRunLock } from '../../checkpoints/run-lock.ts';
import { listCheckpoints } from '../../checkpoints/checkpoint.ts';
import { countLines } from '../../util/jsonl.ts';
import { endpointProblems } from '../../workers/preflight.ts';
import { checkFits } from '../../trainer/plan-config.ts';

export const summary = 'run GRPO or PPO (algorithm) on G-STEER or QREF (env): validate, start Redis/policy server/workers, train, checkpoint';
export const usage = `usage: gsteer train --config FILE [--config FILE ...] [--set key=value ...] [--init-adapter DIR]
                   [--dashboard [--dashboard-port P]]

Validates the config and the dataset first (every problem listed, exit 2, nothing
started). Then starts a local redis-server when none answers on queues.redisUrl (and one
is installed), the embedded policy server (policy.server: embedded) or checks the external
one, the trainer, group and rollout workers as child processes, and runs the updates: one
line per update on stdout (step, reward, reward_std, frac_reward_zero_std, invalid rate,
turns, loss, grad_norm, seconds) above a progress bar with ETA (without a terminal: the
ETA ends each line). The run lives in runDir/runName (layout: checkpoints/README.md), with
TensorBoard event files beside metrics.jsonl (tensorboard --logdir runDir).

  --init-adapter DIR   start GRPO from a PEFT LoRA adapter (e.g. the SFT output; with
                       trainer.engine tinker also a tinker:// state the engine holds); its
                       rank, alpha and target modules must match lora.*
  sft.enabled: true    without --init-adapter: run the SFT stage first (gsteer sft train,
                       then the valid-turn check) and start GRPO from its adapter
  --dashboard          serve the web dashboard of this run on 127.0.0.1 while it trains
                       (port 6007, or a free one when that is taken; --dashboard-port P
                       to choose) and print its URL; afterwards reopen it with
                       gsteer monitor RUN_DIR --serve
  SIGINT/SIGTERM       stop admitting updates, finish the admitted ones, checkpoint, exit 0
                       (a second signal stops at once, after a checkpoint)

Worker processes for other machines: gsteer worker rollout|group|trainer --run RUN_DIR.`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      'init-adapter': { type: 'string' },
      dashboard: { type: 'boolean', default: false },
      'dashboard-port': { type: 'string' },
    },
  });
  const sets = [...(values.set ?? []), ...(values['init-adapter'] ? [`initAdapter=${values['init-adapter']}`] : [])];
  const cfg = loadConfig(values.config ?? [], sets);
  const prepared = validateRunInputs(cfg);
  // The memory plan against the device (trainer/plan-config.ts): refused here, before anything starts.
  // (trainer.engine tinker: a remote engine trains on its own GPUs, method §5.13)
  console.error(
    `gsteer train: ${cfg.trainer.engine === 'tinker' ? `memory plan: not checked (trainer.engine tinker: ${cfg.trainer.baseUrl} trains on its own devices)` : checkFits(cfg).summary}`,
  );
  for (const w of prepared.warnings) console.error(`gsteer train: warning: ${w}`);
  // QREF has no per-user state (method §13.2): nothing to say about where user states start
  if (cfg.env === 'gsteer')
    console.error(
      cfg.grpo.initialUserStates
        ? `gsteer train: GRPO starts from ${prepared.states.length} user state(s) in ${cfg.grpo.initialUserStates} (grpo.initialUserStates)`
        : 'gsteer train: GRPO starts with every user state empty (the paper; set grpo.initialUserStates to start from a file)',
    );
  const redisBad = await redisProblem(cfg.queues.redisUrl);
  if (redisBad) throw new InputError(redisBad);
  const down = await endpointProblems(cfg);
  if (down.length) {
    console.error(`gsteer train: ${down.length} endpoint(s) the run calls do not answer; nothing was started:\n  ${down.join('\n  ')}`);
    return 1;
  }
  // An external policy server must answer before a run directory is created for it.
  if (cfg.policy.server === 'external' && cfg.policy.baseUrl) {
    try {
      const key = process.env[cfg.policy.apiKeyEnv];
      await waitForPolicyServer(cfg.policy.baseUrl, { maxRetries: cfg.policy.maxRetries, timeoutMs: cfg.policy.timeoutMs, ...(key ? { apiKey: key } : {}) });
    } catch (e) {
      if (!(e instanceof TransientError)) throw e;
      console.error(`gsteer train: ${e.message}`);
      return 1;
    }
  }
  const root = newRunLayout(cfg).root; // refuse a used run directory before minutes of SFT
  const created = !existsSync(root);
  const lock = acquireRunLock(root, 'train');
  let started = false;
  try {
    // method §7: the SFT checkpoint is what GRPO starts from, unless an adapter is given.
    const grpoCfg = cfg.sft.enabled && !cfg.initAdapter ? { ...cfg, initAdapter: (await sftPhase(cfg)).adapterDir } : cfg;
    const { layout, info } = createRunDir(grpoCfg);
    const dashboard = values.dashboard ? await trainDashboard(layout.root, values['dashboard-port']) : null;
    try {
      const code = await launchRun({
        cfg: grpoCfg,
        layout,
        info,
        instances: prepared.instances,
        userStates: { kind: 'init', states: prepared.states },
        startStep: 0,
      });
      started = countLines(layout.metrics) > 0 || listCheckpoints(layout).length > 0;
      return code;
    } catch (e) {
      started = countLines(layout.metrics) > 0 || listCheckpoints(layout).length > 0;
      if (started || e instanceof InputError) throw e;
      console.error(`gsteer train: the run could not start: ${(e as Error).message}`);
      return 1;
    } finally {
      await dashboard?.close();
      if (dashboard && started) console.error(`gsteer train: dashboard stopped; reopen it on the run with: gsteer monitor ${layout.root} --serve`);
    }
  } finally {
    lock.release();
    // nothing to resume from: leave no run directory that train and resume would both refuse
    if (!started && created) {
      rmSync(root, { recursive: true, force: true });
      console.error(`gsteer train: removed ${root} (the run did not start)`);
    }
  }
}
