// One optimizer update through the Tinker contract (method §5.13): the batch's Tinker calls
// (policy-plan.ts, sft-plan.ts) on a TrainingEngine (gsteer's, in process or over HTTP, or a remote
// Tinker engine), then optim_step with the update's AdamParams. The metrics are trainStep's
// (trainer/step.ts), computed from the logprobs the engine returns.
import type { AdamWOptions } from '../optim/adamw.ts';
import { grpoStatMeans } from '../grpo/stats.ts';
import type { AdamParams, EngineDatum, GsteerCallOptions, TrainingEngine } from '../engine/types.ts';
import type { StepMetrics, StepOptions, TrainBatch } from '../step.ts';
import type { Rows } from '../step-batch.ts';
import { assert } from '../../util/errors.ts';
import { toColumns } from './datums.ts';
import { policyPlan, type PlannedCall } from './policy-plan.ts';
import { policyLoss, policyTerms } from './policy-terms.ts';
import { sftCall } from './sft-plan.ts';

/** What an update needs of an engine: the two Tinker training calls. */
export type EngineCalls = Pick<TrainingEngine, 'forwardBackward' | 'optimStep'>;

export interface ContractStepOptions extends StepOptions {
  adam: AdamWOptions;
  /** The engine reads gsteer's extensions (embedded): prefix trees, dropout seeds, entropy. A remote Tinker engine gets plain calls. */
  extensions: boolean;
}

export interface ContractStepResult {
  metrics: StepMetrics;
  /** The engine's logprobs of the batch's rows [B][T] (column 0 = 0): e.g. the sampler-vs-trainer check (method §5.13). */
  logprobs: number[][];
}

/** Tinker's AdamParams of an update: the run's AdamW with the step's learning rate and clip. */
export function adamParams(lr: number, adam: AdamWOptions, maxGradNorm: number): AdamParams {
  return { learning_rate: lr, beta1: adam.beta1, beta2: adam.beta2, eps: adam.eps, weight_decay: adam.weightDecay, grad_clip_norm: maxGradNorm };
}

/** Run the datums of a call; `plain` strips gsteer's datum extensions for a remote engine. */
/** What a call gives back: logprobs [B][T] (columns), entropy when asked, and the engine's own diagnostics (gsteer's engine: constraint/*). */
interface Scored {
  logp: number[][];
  entropy?: number[][];
  engine: Record<string, number>;
}

/** The engine's diagnostics under gsteer's names: the SDK-mergeable "name:unique" of the wire back to "name"; loss:sum left out. */
function engineDiagnostics(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(metrics).flatMap(([k, v]) => (k.startsWith('constraint/') || k.startsWith(ENGINE_TIME) ? [[k.replace(/:unique$/, ''), v]] : [])),
  );
}

/** gsteer's engine reports each call's compute time (trainer/engine/tfjs-engine.ts ENGINE_SECONDS). */
const ENGINE_TIME = 'time/engine_seconds';
const engineTime = (m: Record<string, number>): number => m[ENGINE_TIME] ?? m[`${ENGINE_TIME}:unique`] ?? 0;

async function call(engine: EngineCalls, c: PlannedCall, forwardOnly: boolean, o: ContractStepOptions): Promise<Scored> {
  const gsteer: GsteerCallOptions | undefined = o.extensions
    ? { prefixGrouping: o.prefixGrouping, dropoutSeed: o.dropoutSeed, withEntropy: o.withEntropy }
    : undefined;
  const data: EngineDatum[] = o.extensions ? c.data : c.data.map((d) => ({ tokens: d.tokens, inputs: d.inputs }));
  const r = await engine.forwardBackward(data, { lossFn: c.lossFn, config: c.config, forwardOnly, ...(gsteer ? { gsteer } : {}) });
  const entropy = r.outputs.every((x) => x.entropy) ? toColumns(r.outputs.map((x) => x.entropy!)) : undefined;
  return { logp: toColumns(r.outputs.map((x) => x.logprobs!)), ...(entropy ? { entropy } : {}), engine: engineDiagnostics(r.metrics) };
}

export interface ContractGradients {
  loss: number;
  lossTokens: number;
  stats: Record<string, number>;
  logprobs: number[][];
}

/** The batch's forward_backward calls: the engine holds its gradient afterwards (no optim_step). */
export async function contractForwardBackward(engine: EngineCalls, batch: TrainBatch, o: ContractStepOptions): Promise<ContractGradients> {
  if (batch.kind === 'sft') {
    const c = sftCall(batch);
    const scored = await call(engine, c.call, false, o);
    return { loss: weightedNll(scored.logp, c.weights), lossTokens: c.tokens, stats: scored.engine, logprobs: scored.logp };
  }
  assert(o.grpo, 'contractStep: a policy batch needs StepOptions.grpo');
  const plan = policyPlan(batch, o.grpo);
  let scored: Scored;
  if (plan.kind === 'builtin') scored = await call(engine, plan.call, false, o);
  else {
    const fwd = await call(engine, plan.forward, true, o);
    const bwd = await call(engine, plan.backward(fwd.logp), false, o);
    scored = { ...fwd, logp: bwd.logp, engine: { ...bwd.engine, [ENGINE_TIME]: (fwd.engine[ENGINE_TIME] ?? 0) + (bwd.engine[ENGINE_TIME] ?? 0) } };
  }
  const r = policyLoss(policyTerms(batch, o.grpo), o.grpo, scored.logp, scored.entropy);
  const stats = { ...grpoStatMeans(r.sums), ...scored.engine };
  if (!scored.entropy) delete stats.entropy; // a remote engine reports none
  return { loss: r.loss, lossTokens: r.sums.tokens, stats, logprobs: scored.logp };
}

export async function contractStep(engine: EngineCalls, batch: TrainBatch, o: ContractStepOptions): Promise<ContractStepResult> {
  const t0 = performance.now();
  const g = await contractForwardBackward(engine, batch, o);
  const step = await engine.optimStep(adamParams(o.lr, o.adam, o.maxGradNorm));
  const seconds = (performance.now() - t0) / 1000;
  // the engine's compute of the update's calls (gsteer's engine says; absent from a remote one): the rest of step_time_s is the contract's
  const engineSeconds: Record<string, number> = g.stats[ENGINE_TIME] !== undefined ? { [ENGINE_TIME]: g.stats[ENGINE_TIME]! + engineTime(step.metrics) } : {};
  const numTokens = batch.inputIds.reduce((s, r) => s + r.length, 0);
  const metrics: StepMetrics = {
    loss: g.loss,
    grad_norm: step.metrics.grad_norm ?? Number.NaN,
    learning_rate: o.lr,
    num_tokens: numTokens,
    loss_tokens: g.lossTokens,
    tokens_per_second: numTokens / seconds,
    step_time_s: seconds,
    micro_batches: Math.ceil(batch.inputIds.length / o.microBatchSize),
    // gsteer's engine skips a step whose gradient is not finite (as trainStep); a remote engine does not say
    nonfinite_skipped: step.metrics.nonfinite_skipped ?? (Number.isFinite(g.loss) && Number.isFinite(step.metrics.grad_norm ?? 0) ? 0 : 1),
    ...g.stats,
    ...engineSeconds,
  };
  return { metrics, logprobs: g.logprobs };
}

/** SFT's loss: -sum of weight x logp (the weights carry 1 / target tokens). */
function weightedNll(logp: Rows, weights: Rows): number {
  let s = 0;
  logp.forEach((r, b) => r.forEach((x, t) => (s -= x * weights[b]![t]!)));
  return s;
}
