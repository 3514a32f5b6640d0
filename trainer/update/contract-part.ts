// The trainer part over the Tinker contract (method §5.13; trainer.engine embedded | tinker): the
// trainer worker builds each update's Tinker calls (policy-plan.ts) and sends them with gsteer's
// client (trainer/tinker/client/) to gsteer's own engine behind `gsteer trainer serve` or to a
// remote Tinker engine. It holds no model: the engine computes, saves and restores.
//   init     create_model (the run's LoRA), then load_state of the init adapter (imported into the
//            embedded service's state folder, or a tinker:// path a remote engine knows)
//   step     [forward (KL reference)] -> forward_backward (+ forward for the surrogate) -> optim_step;
//            the sampler-vs-trainer KL and the stale-adapter check (sampler-check.ts)
//   save     save_state (+ save_weights_for_sampler for a remote sampler) -> engine-state.json
//            (+ the state's files, embedded)
//   load     load_state_with_optimizer of a version; a model the engine lost (it restarted) is
//            created again first, and the log says so
import { randomUUID } from 'node:crypto';
import type { RunConfig } from '../../configs/schema.ts';
import { InputError, TransientError } from '../../util/errors.ts';
import type { EngineDatum, ForwardBackwardOptions, ForwardBackwardResult } from '../engine/types.ts';
import type { LoraSpec } from '../service/types.ts';
import { grpoAdam, grpoStepOptions } from '../step-options.ts';
import { JsonlTrainerCallSink, ModelLostError, teeTrainerSinks, TinkerClient, TrainerCallAggregator, type TrainingModel } from '../tinker/client/index.ts';
import { contractStep, type EngineCalls } from './contract-step.ts';
import { EMBEDDED_KEY_ENV, LocalStates, readEngineState, writeEngineState } from './engine-states.ts';
import type { TrainerPart, TrainSequence, UpdateStats } from './part.ts';
import { checkedTurns, samplerTrainerKl, staleVerdict, type Candidate } from './sampler-check.ts';
import { policyRows } from './sequences.ts';
import { policyDatums } from './policy-plan.ts';
import { toColumns } from './datums.ts';
import { DIAGNOSTICS } from './step-part.ts';

export interface ContractPartOptions {
  cfg: RunConfig;
  runId: string;
  totalSteps: () => number;
  /** The engine (embedded: the service gsteer started), without /api/v1. */
  baseUrl: string;
  /** The engine's name of the base model (create_model base_model). */
  baseModel: string;
  /** gsteer's own engine: its extensions and its state folder on this machine; null for a remote engine. */
  embedded: { stateDir: string } | null;
  /** RUN_DIR/trainer_calls.jsonl: one record per HTTP attempt. */
  callsFile?: string;
  /** The run's folder of adapter version v (adapters/policy-vN): the states the stale-adapter check loads. */
  versionDir: (v: number) => string;
  log: (line: string) => void;
}

/** A TrainingModel as contractStep's engine: one call each; keys default to <run>:<model>:<seq>. */
function engineOf(m: TrainingModel): EngineCalls {
  return {
    async forwardBackward(data: readonly EngineDatum[], o: ForwardBackwardOptions): Promise<ForwardBackwardResult> {
      const call = o.forwardOnly ? m.forward.bind(m) : m.forwardBackward.bind(m);
      const r = await call(data, o.lossFn, o.config, o.gsteer ? { gsteer: o.gsteer } : {});
      return { outputs: r.outputs, metrics: r.metrics };
    },
    async optimStep(adam) {
      return { metrics: await m.optimStep(adam) };
    },
  };
}

export async function contractTrainerPart(o: ContractPartOptions): Promise<TrainerPart> {
  const { cfg } = o;
  const calls = new TrainerCallAggregator();
  // Idempotency keys <run>:<this part's incarnation>:<model>:<seq>: a retried HTTP attempt resends its
  // call's key (never applied twice); a restarted worker opens a new session and reloads the last
  // version's state, so its calls must not alias the dead incarnation's.
  const connect = () =>
    TinkerClient.connect({
      baseUrl: o.baseUrl,
      apiKeyEnv: o.embedded ? EMBEDDED_KEY_ENV : cfg.trainer.apiKeyEnv,
      keyPrefix: `${o.runId}:${randomUUID().slice(0, 8)}`,
      sink: o.callsFile ? teeTrainerSinks(new JsonlTrainerCallSink(o.callsFile), calls) : calls,
    });
  let client = await connect();
  const lora: LoraSpec = {
    rank: cfg.lora.r,
    seed: cfg.seed,
    trainAttn: true,
    trainMlp: true,
    trainUnembed: false,
    alpha: cfg.lora.alpha,
    dropout: cfg.lora.dropout,
    targetModules: [...cfg.lora.targetModules],
  };
  const local = o.embedded ? new LocalStates(o.embedded.stateDir) : null;
  const extensions = local !== null;
  const models = new Map<'main' | 'shadow' | 'base', TrainingModel>();
  let lastStep = 0;
  let held: number | null = null; // the adapter version whose state the main model holds (saved in its folder)
  const create = async (role: 'main' | 'shadow' | 'base') => {
    const m = await client.createModel({
      baseModel: o.baseModel,
      rank: lora.rank,
      seed: lora.seed,
      trainAttn: true,
      trainMlp: true,
      trainUnembed: false,
      gsteer: { lora_alpha: lora.alpha!, lora_dropout: lora.dropout!, target_modules: lora.targetModules! },
    });
    models.set(role, m);
    return m;
  };
  const main = () => {
    const m = models.get('main');
    if (!m) throw new Error('internal: contract trainer used before init/load');
    return m;
  };
  /** load_state of a local folder (embedded: imported) or a tinker:// path. */
  const loadFrom = async (m: TrainingModel, source: string, optimizer: boolean) => {
    if (source.startsWith('tinker://')) return m.loadState(source, { optimizer });
    if (!local)
      throw new InputError(
        `${source}: a remote Tinker engine cannot read a local folder; start from a tinker:// path the engine saved (e.g. its SFT state), or use trainer.engine=embedded`,
      );
    const imp = await local.import(source, `${o.runId}-import`, { baseModel: o.baseModel, lora });
    if (optimizer && !imp.optimizer)
      throw new InputError(`${source}: no optimizer.json; this adapter version was not written by a trainer (resume needs the optimizer state)`);
    await m.loadState(imp.path, { optimizer });
    local.drop(imp.path);
  };
  /** Where version v's state is: its folder (embedded) or the engine's path it recorded. */
  const stateOf = (v: number): string => {
    const dir = o.versionDir(v);
    const rec = readEngineState(dir);
    if (local) return dir;
    if (!rec)
      throw new InputError(
        `${dir}: no engine-state.json; this adapter version was not saved through a Tinker engine (trained with trainer.engine=inprocess); resume with that engine`,
      );
    return rec.state;
  };
  const datums = (seqs: TrainSequence[]) =>
    policyDatums(
      policyRows(
        seqs,
        false,
        seqs.map(() => null),
      ),
      { weights: seqs.map((s) => [...s.promptIds, ...s.completionIds].map(() => 0)) },
    );
  const gsteer = extensions ? { prefixGrouping: cfg.grpo.prefixGrouping } : undefined;
  /** Completion logprobs of `seqs` under model m ([turn][completion token]). */
  const score = async (m: TrainingModel, seqs: TrainSequence[], reference = false) => {
    const r = await m.forward(
      datums(seqs),
      'cross_entropy',
      undefined,
      gsteer || reference ? { gsteer: { ...gsteer, ...(reference ? { reference: true } : {}) } } : {},
    );
    return r.outputs.map((x, i) => x.logprobs!.slice(seqs[i]!.promptIds.length - 1));
  };
  /** The stale-adapter check (sampler-check.ts) on a few turns of the batch's newest version. */
  const staleCheck = async (batch: TrainSequence[], step: number, current: number[][]): Promise<Record<string, number>> => {
    const { turns, every } = cfg.trainer.samplerCheck;
    const c = turns > 0 && step % every === 0 ? checkedTurns(batch, turns) : null;
    if (!c) return {};
    const seqs = c.idx.map((b) => batch[b]!);
    const shadow = models.get('shadow') ?? (await create('shadow'));
    const under = async (v: number) => (await loadFrom(shadow, stateOf(v), false), score(shadow, seqs));
    // the main model holds version step - 1: its logprobs of the batch are theta_k's when k = step - 1 (no dropout)
    const cur = c.version === step - 1 && cfg.lora.dropout === 0 ? c.idx.map((b) => current[b]!.slice(batch[b]!.promptIds.length)) : await under(c.version);
    const prev = await under(c.version - 1);
    const base = extensions ? await score(main(), seqs, true) : await score(models.get('base') ?? (await create('base')), seqs); // a fresh LoRA (B = 0) is the base
    const cands: Candidate[] = [
      { name: 'current', logprobs: cur },
      { name: 'previous', logprobs: prev },
      { name: 'base', logprobs: base },
    ];
    return staleVerdict(
      seqs.map((s) => s.oldLogprobs),
      cands,
      c.version,
    );
  };
  /**
   * The engine lost the main model (its service restarted, its session ended): wait until it answers,
   * open a new session, create the model and load version v's state. Says so in the log.
   */
  const recover = async (v: number, why: string) => {
    o.log(
      `the trainer engine lost model ${models.get('main')?.modelId ?? '?'} (${why}): opened a new session, created a new model and loaded the state of ${o.versionDir(v)}`,
    );
    client.close();
    client = await reconnect(connect, o.log);
    models.clear();
    await loadFrom(await create('main'), stateOf(v), true);
    held = v;
  };
  const update = async (batch: TrainSequence[], step: number): Promise<UpdateStats> => {
    lastStep = step;
    calls.takeWindow(); // this update's calls only
    const rows = policyRows(
      batch,
      cfg.grpo.maxPolicyLag > 0,
      batch.map(() => null),
    );
    const so = { ...grpoStepOptions(cfg, step - 1, o.totalSteps()), adam: grpoAdam(cfg), extensions };
    const ref =
      cfg.grpo.betaKl > 0
        ? {
            refLogprobs: toColumns(
              (
                await main().forward(policyDatums(rows, { weights: rows.completionMask }), 'cross_entropy', undefined, {
                  gsteer: { ...gsteer, reference: true },
                })
              ).outputs.map((x) => x.logprobs!),
            ),
          }
        : {};
    const r = await contractStep(engineOf(main()), { ...rows, ...ref }, so);
    const check = await staleCheck(batch, step, r.logprobs);
    const m = r.metrics;
    const replay = Object.fromEntries(Object.entries(m).filter(([k]) => k.startsWith('constraint/'))); // the engine's mask replay
    // the update's calls: the engine's compute and the rest, the contract's own time (HTTP, encoding, futures)
    const engineSeconds = m['time/engine_seconds'];
    const overhead: Record<string, number> =
      engineSeconds !== undefined ? { 'trainer/engine_seconds': engineSeconds, 'trainer/overhead_seconds': m.step_time_s - engineSeconds } : {};
    const diagnostics = {
      ...Object.fromEntries(DIAGNOSTICS.filter((k) => m[k] !== undefined).map((k) => [k, m[k]!])),
      ...replay,
      ...samplerTrainerKl(batch, r.logprobs),
      ...check,
      ...calls.takeWindow(),
      ...overhead,
      'train/nonfinite_skipped': m.nonfinite_skipped,
    };
    return {
      loss: m.loss,
      clip_ratio: m['clip_ratio/region_mean'] ?? 0,
      grad_norm: m.grad_norm,
      entropy: m.entropy ?? 0,
      num_tokens: m.num_tokens,
      train_seconds: m.step_time_s,
      diagnostics,
    };
  };
  return {
    async init(initAdapter) {
      const m = await create('main');
      if (initAdapter) await loadFrom(m, initAdapter, false);
    },
    async load(dir) {
      const rec = readEngineState(dir);
      const source = local ? dir : rec?.state;
      if (!source)
        throw new InputError(
          `${dir}: no engine-state.json; this adapter version was not saved through a Tinker engine (trained with trainer.engine=inprocess); resume with that engine`,
        );
      const v = versionOf(dir);
      try {
        await loadFrom(models.get('main') ?? (await create('main')), source, true);
        held = v;
      } catch (e) {
        if (!lost(e)) throw e;
        await recover(v, reason(e));
      }
    },
    async step(batch, step) {
      try {
        return await update(batch, step);
      } catch (e) {
        // the service restarted mid-update: nothing of this update survived it, so it runs again from the last version
        if (!lost(e) || held === null) throw e;
        await recover(held, reason(e));
        return await update(batch, step);
      }
    },
    async save(dir) {
      const m = main();
      const name = `${o.runId}-v${lastStep}`;
      const state = await m.saveState(name, { overwrite: true });
      const sampler = local ? null : await m.saveWeightsForSampler(name);
      if (local) local.export(state, dir);
      writeEngineState(dir, { state, sampler });
      held = lastStep;
    },
    async close() {
      client.close();
    },
  };
}

/** The engine no longer has the model or session (ModelLostError), or could not be reached through the client's retries. */
function lost(e: unknown): boolean {
  return e instanceof ModelLostError || (e instanceof TransientError && /connection|ECONNREFUSED|ECONNRESET|socket|timed out/i.test(e.message));
}

/** The engine's own words on why (the reply past the client's preamble), short. */
function reason(e: unknown): string {
  return (e as Error).message.replace(/^.*?(HTTP \d+: )/, '$1').slice(0, 200);
}

/** A new client once the engine answers again (a restarted service loads its model first): up to 10 minutes. */
async function reconnect(connect: () => Promise<TinkerClient>, log: (l: string) => void): Promise<TinkerClient> {
  const until = Date.now() + 600_000;
  for (let k = 0; ; k++) {
    try {
      return await connect();
    } catch (e) {
      if (Date.now() > until || !lost(e)) throw e;
      if (k === 0) log(`waiting for the trainer engine to answer again (${(e as Error).message.slice(0, 120)})`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** The adapter version of a version folder (adapters/policy-vN). */
function versionOf(dir: string): number {
  const m = /policy-v(\d+)\/?$/.exec(dir);
  return m ? Number(m[1]) : -1;
}
