// Everything `gsteer train` checks before any process starts (boundaries validate): the
// dataset, the initial user states, the init adapter against cfg.lora, the policy model
// folder (preflight.ts), and the run directory (not in use, not holding a run). All problems
// are collected into one InputError. A new run gets a run id unique to it
// (`<runName>-<8 hex>`): its Redis keys are its own (checkpoints/run-keys.ts).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { stringify } from 'yaml';
import { writeFileAtomic } from '../util/atomic.ts';
import { loraMismatch } from '../checkpoints/checkpoint.ts';
import { runLayout, type RunLayout } from '../checkpoints/layout.ts';
import type { RunConfig } from '../configs/schema.ts';
import { runConfigTree } from '../configs/load.ts';
import { loadInstances, loadUserStates } from '../data/load.ts';
import type { UserState } from '../data/schema.ts';
import type { EnvInstance } from '../rollout/env/types.ts';
import { asQrefInstances, loadQrefData } from '../rollout/qref/env.ts';
import { InputError } from '../util/errors.ts';
import { writeRunInfo, type RunInfo } from '../checkpoints/run-info.ts';
import { listCheckpoints } from '../checkpoints/checkpoint.ts';
import { checkNotLocked } from '../checkpoints/run-lock.ts';
import { modelProblems } from './preflight.ts';

export interface Prepared {
  instances: EnvInstance[];
  states: UserState[];
  warnings: string[];
}

/** The instances of the config's environment (method §13): G-STEER instances, or QREF questions with their corpus. */
export function loadEnvInstances(cfg: RunConfig): EnvInstance[] {
  return cfg.env === 'qref' ? asQrefInstances(loadQrefData(cfg).questions) : loadInstances(cfg.data.instances);
}

export function validateRunInputs(cfg: RunConfig): Prepared {
  const problems: string[] = [];
  const warnings: string[] = [];
  let instances: EnvInstance[] = [];
  let states: UserState[] = [];
  const collect = (f: () => void) => {
    try {
      f();
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      problems.push(...e.problems);
    }
  };
  // method §13: the environment's instances (QREF: the questions, validated with the corpus).
  const files = cfg.env === 'qref' ? [cfg.qref.data.questions] : cfg.data.instances;
  collect(() => (instances = loadEnvInstances(cfg)));
  // GRPO starts from grpo.initialUserStates, or with every user empty (the paper's protocol); QREF has no user state.
  const initial = cfg.env === 'gsteer' ? cfg.grpo.initialUserStates : undefined;
  if (initial) {
    if (existsSync(initial)) collect(() => (states = loadUserStates([initial])));
    else
      problems.push(
        `grpo.initialUserStates = ${initial}: file not found; point it at a user_states.jsonl, or drop it so every user starts empty (the paper's GRPO)`,
      );
  }
  if (!problems.length && !instances.some((i) => i.split === 'train'))
    problems.push(`${files.join(', ')}: no instance has split "train"; GRPO trains on the train split`);
  for (const id of problems.length ? [] : (cfg.grpo.trainIds ?? [])) {
    const inst = instances.find((i) => i.id === id);
    if (!inst)
      problems.push(
        `grpo.trainIds: "${id}" is not an instance id in ${files.join(', ')}; use ids of train-split instances (gsteer data stats lists them) or drop grpo.trainIds to train on all`,
      );
    else if (inst.split !== 'train')
      problems.push(`grpo.trainIds: "${id}" has split "${inst.split}"; GRPO trains on the train split only, so list train-split ids`);
  }
  problems.push(...modelProblems(cfg));
  collect(() => runConfigTree(cfg)); // a secret written out in the config would reach RUN/config.yaml
  const enginePath = cfg.initAdapter?.startsWith('tinker://') ?? false; // a state the remote engine holds (method §5.13)
  if (enginePath && cfg.trainer.engine !== 'tinker')
    problems.push(
      `initAdapter = ${cfg.initAdapter}: a tinker:// path names a state on a remote Tinker engine; with trainer.engine=${cfg.trainer.engine} pass a local PEFT adapter folder`,
    );
  if (cfg.initAdapter && !enginePath) {
    if (!existsSync(cfg.initAdapter))
      problems.push(`initAdapter = ${cfg.initAdapter}: folder not found; pass a PEFT adapter folder (adapter_config.json + adapter_model.safetensors)`);
    else problems.push(...loraMismatch(cfg.initAdapter, cfg).map((m) => `initAdapter = ${cfg.initAdapter}: ${m}`));
  }
  if (problems.length) throw new InputError(`${problems.length} problem(s) before starting the run:\n  ${problems.join('\n  ')}`, problems);
  return { instances, states, warnings };
}

/** The layout of a run that does not exist yet; a run directory in use, or holding a run, is refused. */
export function newRunLayout(cfg: RunConfig): RunLayout {
  const layout = runLayout(resolve(cfg.runDir, cfg.runName));
  checkNotLocked(layout.root); // names the live command that holds it
  if (existsSync(layout.runJson)) {
    if (listCheckpoints(layout).length)
      throw new InputError(
        `run directory ${layout.root} already holds a run; continue it with gsteer resume ${layout.root}, or start another with --set runName=NEW`,
      );
    throw new InputError(
      `run directory ${layout.root} holds a run that stopped before its first checkpoint (nothing to resume); remove it (rm -r ${layout.root}) and start again, or start another with --set runName=NEW`,
    );
  }
  return layout;
}

/** A new run directory with the resolved config and run.json; refuses to reuse a run. */
export function createRunDir(cfg: RunConfig): { layout: RunLayout; info: RunInfo } {
  const layout = newRunLayout(cfg);
  mkdirSync(layout.logs, { recursive: true });
  writeFileAtomic(layout.config, stringify(runConfigTree(cfg))); // ${VAR} references, never their values
  const info: RunInfo = {
    v: 1,
    runId: `${cfg.runName}-${randomBytes(4).toString('hex')}`,
    epoch: 0,
    createdAt: new Date().toISOString(),
    policyUrl: null,
    initAdapter: cfg.initAdapter ? (cfg.initAdapter.startsWith('tinker://') ? cfg.initAdapter : resolve(cfg.initAdapter)) : null,
  };
  writeRunInfo(layout, info);
  return { layout, info };
}
