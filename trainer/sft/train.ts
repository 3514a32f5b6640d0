// method §7: the SFT stage. LoRA trained with masked token cross-entropy on scaffolded step
// examples (data/sft/), micro-batched (trainer/step.ts), AdamW, held-out loss, a progress
// bar with ETA, checkpoints + exact resume (trainer/sft/checkpoint.ts), and the final PEFT
// adapter in <runDir>/<runName>/sft/adapter, which `gsteer train --init-adapter` resumes.
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { RunConfig } from '../../configs/schema.ts';
import { sha256File, writeDirAtomic, writeFileAtomic } from '../../util/atomic.ts';
import { listSftCheckpoints, readOptimizer, readSftCheckpoint, sftLayout, writeSftCheckpoint, type SftLayout, type SftState } from './checkpoint.ts';
import { epochBatches, heldOutMask, readTrainableExamples, tokenizeWithin, type TokenizedExample } from './tokens.ts';
import { BudgetCounts, formatBudget } from '../../data/sft/budget.ts';
import { JsonlCallSink, type CallSink } from '../../endpoints/index.ts';
import { InputError } from '../../util/errors.ts';
import { progressBar } from '../../util/progress.ts';
import { Rng } from '../../util/rng.ts';
import { selectBackend } from '../../model/backend.ts';
import { createLora } from '../../model/lora/lora.ts';
import { loadPeftAdapter, savePeftAdapter } from '../../model/lora/index.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { loadModel, tokenLogprobs, type Qwen3Model } from '../../model/index.ts';
import { AdamW } from '../optim/adamw.ts';
import { lrAt } from '../optim/schedule.ts';
import type { Policy } from '../policy.ts';
import { trainStep } from '../step.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';
import { sftLoss } from './loss.ts';

export interface SftRunOptions {
  resume?: boolean;
  fresh?: boolean;
  log?: (line: string) => void;
  progress?: boolean;
  /** Return after this many updates of this call, as if killed (crash/resume tests): no final adapter, adapterDir ''. */
  haltAfter?: number;
  /** The environment's examples, written to `out` when sft.examples names no file (the environment's, given by the command). */
  writeExamples?: (cfg: RunConfig, out: string, calls: CallSink) => Promise<string>;
  /** Called with the trained model and adapter before they are disposed (same-process eval, tests). */
  onTrained?: (model: Qwen3Model, adapter: LoraAdapter) => void | Promise<void>;
}

export interface SftRunResult {
  steps: number;
  trainExamples: number;
  heldOutExamples: number;
  /** Examples over sft.maxSeqLen: left out (no fit even without history) and trimmed (oldest history left out; budget.ts). */
  droppedTooLong: number;
  trimmed: number;
  trainLoss: number | null; // last update
  heldOutLoss: number | null; // at the end
  heldOutLossBefore: number | null; // before the first update (a fresh LoRA: the base alone); null on resume
  adapterDir: string;
  examplesFile: string;
  seconds: number;
}

/** The examples file: cfg.sft.examples, or the environment's, built into the run folder by `write`. */
async function examplesFile(
  cfg: RunConfig,
  layout: SftLayout,
  resume: boolean,
  log: (l: string) => void,
  write: SftRunOptions['writeExamples'],
): Promise<string> {
  if (cfg.sft.examples) return cfg.sft.examples;
  if (resume && existsSync(layout.examples)) return layout.examples; // its sha256 is checked against the checkpoint
  if (!write)
    throw new InputError(
      'sft.examples is unset and this caller builds no examples; name an examples file (sft.examples) or run `gsteer sft train`, which builds them',
    );
  // LLM teacher / http encoder calls are recorded beside the examples (endpoints/ call records)
  const calls = new JsonlCallSink(join(layout.root, 'llm_calls.jsonl'));
  log(await write(cfg, layout.examples, calls));
  return layout.examples;
}

function splitExamples(cfg: RunConfig, file: string, log: (l: string) => void) {
  const tok = qwen3Tokenizer();
  const raw = readTrainableExamples(file);
  const heldOut = heldOutMask(raw, cfg.seed, cfg.sft.heldOutFraction);
  const train: TokenizedExample[] = [];
  const held: TokenizedExample[] = [];
  // method §7.8: every example over the budget is counted, trimmed (oldest history first) or dropped
  const budget = new BudgetCounts(cfg.sft.maxSeqLen, null, cfg.sft.overBudget === 'trim');
  raw.forEach((ex, i) => {
    const t = tokenizeWithin(tok, ex, i, cfg.sft.maxSeqLen, budget);
    if (t) (heldOut[i] ? held : train).push(t);
  });
  log(formatBudget(budget));
  const { dropped, trimmed } = budget.total;
  if (train.length === 0)
    throw new InputError(
      `${file}: no training example fits sft.maxSeqLen=${cfg.sft.maxSeqLen} (${dropped} too long, ${held.length} held out); raise sft.maxSeqLen or lower sft.heldOutFraction`,
    );
  return { train, held, dropped, trimmed };
}

const policyOf = (model: Qwen3Model, adapter: LoraAdapter): Policy => ({
  variables: () => adapter.variables(),
  score: (inputIds, o) => tokenLogprobs(model, adapter, { inputIds }, o),
});

/** Mean cross-entropy over the target tokens of `examples` (no dropout), micro-batched. */
export function heldOutLoss(model: Qwen3Model, adapter: LoraAdapter | null, examples: readonly TokenizedExample[], micro: number): number {
  let sum = 0;
  let tokens = 0;
  for (let s = 0; s < examples.length; s += micro) {
    const part = examples.slice(s, s + micro);
    const T = Math.max(...part.map((e) => e.inputIds.length));
    const pad = (r: number[]) => [...r, ...new Array<number>(T - r.length).fill(0)];
    const n = part.reduce((a, e) => a + e.targetMask.reduce((x, y) => x + y, 0), 0);
    const loss = tf.tidy(() => {
      const { logprobs } = tokenLogprobs(model, adapter, { inputIds: part.map((e) => pad(e.inputIds)) });
      return sftLoss(logprobs, tf.tensor2d(part.map((e) => pad(e.targetMask))), n).dataSync()[0] as number;
    });
    sum += loss * n;
    tokens += n;
  }
  return tokens ? sum / tokens : NaN;
}

function metricsUpTo(file: string, step: number): void {
  if (!existsSync(file)) return;
  const keep = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l && (JSON.parse(l) as { step: number }).step <= step);
  writeFileAtomic(file, keep.map((l) => `${l}\n`).join(''));
}

interface Plan {
  layout: SftLayout;
  file: string;
  train: TokenizedExample[];
  held: TokenizedExample[];
  dropped: number;
  trimmed: number;
  stepsPerEpoch: number;
  totalSteps: number;
  /** What a checkpoint must match to be resumed (everything but the step). */
  expect: Omit<SftState, 'step' | 'v'>;
}

async function plan(cfg: RunConfig, o: SftRunOptions, log: (l: string) => void): Promise<Plan> {
  const layout = sftLayout(join(cfg.runDir, cfg.runName));
  if (o.fresh) for (const f of [layout.checkpoints, layout.adapter, layout.metrics]) rmSync(f, { recursive: true, force: true });
  else if (!o.resume && listSftCheckpoints(layout).length)
    throw new InputError(`${layout.checkpoints} holds SFT checkpoints of an earlier run; pass --resume to continue it or --fresh to start over`);
  mkdirSync(layout.root, { recursive: true });
  const file = await examplesFile(cfg, layout, o.resume ?? false, log, o.writeExamples);
  const { train, held, dropped, trimmed } = splitExamples(cfg, file, log);
  const stepsPerEpoch = Math.ceil(train.length / cfg.sft.batchSize);
  const totalSteps = Math.min(cfg.sft.maxSteps ?? Infinity, stepsPerEpoch * cfg.sft.epochs);
  const expect = {
    totalSteps,
    seed: cfg.seed,
    examplesSha256: sha256File(file),
    batchSize: cfg.sft.batchSize,
    heldOutFraction: cfg.sft.heldOutFraction,
    baseModel: cfg.policy.model,
    lora: { r: cfg.lora.r, alpha: cfg.lora.alpha, targetModules: [...cfg.lora.targetModules] },
  };
  log(
    `sft: ${train.length} train / ${held.length} held-out examples (over sft.maxSeqLen=${cfg.sft.maxSeqLen}: ${trimmed} trimmed, ${dropped} left out), ${totalSteps} updates of ${cfg.sft.batchSize}`,
  );
  return { layout, file, train, held, dropped, trimmed, stepsPerEpoch, totalSteps, expect };
}

/**
 * A trimmed vocabulary (vocab_map.json) reads unknown ids as unk, so target tokens it lacks
 * cannot be learned or sampled: refuse when more than 1% of the target tokens are unknown.
 */
export function checkVocabulary(model: Qwen3Model, train: readonly TokenizedExample[], examplesFile: string): void {
  const vocab = model.vocab;
  if (!vocab) return;
  let total = 0;
  const missing = new Set<number>();
  let unknown = 0;
  for (const e of train)
    e.inputIds.forEach((id, t) => {
      if (!e.targetMask[t]) return;
      total++;
      if ((vocab.rowOf[id] ?? -1) < 0) unknown++, missing.add(id);
    });
  if (unknown > 0.01 * total)
    throw new InputError(
      `${model.dir}: its vocabulary (vocab_map.json, ${vocab.keptIds.length} ids) lacks ${missing.size} distinct token ids that make up ` +
        `${((100 * unknown) / total).toFixed(1)}% of the SFT target tokens, which it could never learn or emit; recreate the model with ` +
        `gsteer model init --out ${model.dir} --vocab-from ${examplesFile} --vocab-from data/demo/instances.jsonl (or --full-vocab)`,
    );
}

/** Model + adapter + optimizer: fresh (PEFT init from the seed) or from the newest checkpoint. */
async function open(cfg: RunConfig, p: Plan, resume: boolean, log: (l: string) => void) {
  await selectBackend(cfg.trainer.backend, log);
  const model = await loadModel(cfg.policy.model);
  checkVocabulary(model, p.train, p.file);
  const ckpt = resume ? readSftCheckpoint(p.layout, p.expect) : null;
  const adapter = ckpt ? loadPeftAdapter(join(ckpt.dir, 'adapter'), model) : createLora(model, cfg.lora, cfg.seed);
  const opt = new AdamW(adapter.variables(), { beta1: cfg.grpo.adamBeta1, beta2: cfg.grpo.adamBeta2, eps: cfg.grpo.adamEps, weightDecay: cfg.sft.weightDecay });
  if (ckpt) opt.load(readOptimizer(join(ckpt.dir, 'optimizer.safetensors')));
  const start = ckpt?.state.step ?? 0;
  if (ckpt) log(`sft: resuming from ${ckpt.dir} (update ${start} of ${p.totalSteps})`);
  const dispose = () => (opt.dispose(), adapter.dispose(), model.dispose());
  return { model, adapter, opt, start, dispose };
}

export async function runSft(cfg: RunConfig, o: SftRunOptions = {}): Promise<SftRunResult> {
  const log = o.log ?? ((l: string) => console.error(l));
  const t0 = performance.now();
  const p = await plan(cfg, o, log);
  const { layout, train, totalSteps, stepsPerEpoch } = p;
  const heldEval = p.held.slice(0, cfg.sft.evalMaxExamples);
  const { model, adapter, opt, start, dispose } = await open(cfg, p, o.resume ?? false, log);
  metricsUpTo(layout.metrics, start);
  const policy = policyOf(model, adapter);
  const writeAdapter = (dir: string) => void savePeftAdapter(adapter, dir, cfg.policy.model, model.config.numHiddenLayers);
  const metric = (m: Record<string, number | string>) => appendFileSync(layout.metrics, `${JSON.stringify(m)}\n`);
  const end = Math.min(totalSteps, o.haltAfter === undefined ? Infinity : start + o.haltAfter);
  const bar = o.progress === false ? null : progressBar('sft train', end - start);
  let trainLoss: number | null = null;
  let heldLoss: number | null = null;
  // The same held-out examples before any update: what SFT changed, on a measure that can move.
  const heldBefore = start === 0 && end > 0 && heldEval.length ? heldOutLoss(model, adapter, heldEval, cfg.sft.microBatchSize) : null;
  for (let step = start; step < end; step++) {
    const epoch = Math.floor(step / stepsPerEpoch);
    const idx = epochBatches(cfg.seed, epoch, train.length, cfg.sft.batchSize)[step % stepsPerEpoch] as number[];
    const lr = lrAt(step, { kind: cfg.grpo.lrSchedule, baseLr: cfg.sft.learningRate, warmupSteps: cfg.grpo.warmupSteps, totalSteps });
    const batch = { kind: 'sft' as const, inputIds: idx.map((i) => train[i]!.inputIds), targetMask: idx.map((i) => train[i]!.targetMask) };
    const m = trainStep(policy, opt, batch, {
      lr,
      microBatchSize: cfg.sft.microBatchSize,
      maxGradNorm: cfg.grpo.maxGradNorm,
      recompute: cfg.grpo.gradientCheckpointing,
      dropoutSeed: Rng.derive(cfg.seed, 'sft-dropout', step).nextU32(),
    });
    trainLoss = m.loss;
    const done = step + 1;
    metric({
      phase: 'sft',
      step: done,
      epoch,
      loss: m.loss,
      grad_norm: m.grad_norm,
      learning_rate: lr,
      num_tokens: m.num_tokens,
      loss_tokens: m.loss_tokens,
      tokens_per_second: m.tokens_per_second,
      nonfinite_skipped: m.nonfinite_skipped,
    });
    if (m.nonfinite_skipped)
      (bar ?? { print: (l: string) => console.error(l) }).print(
        `sft: step ${done}: non-finite loss or grad_norm (${m.loss}, ${m.grad_norm}); step skipped, adapter unchanged`,
      );
    if (heldEval.length && (done % cfg.sft.evalEvery === 0 || done === totalSteps)) {
      heldLoss = heldOutLoss(model, adapter, heldEval, cfg.sft.microBatchSize);
      metric({ phase: 'sft_eval', step: done, held_out_loss: heldLoss, examples: heldEval.length });
    }
    if (done % cfg.checkpoint.every === 0 || done === totalSteps)
      await writeSftCheckpoint(layout, { state: { v: 1, step: done, ...p.expect }, optimizer: opt.state(), writeAdapter }, cfg.checkpoint.keep);
    bar?.tick(1, `loss ${m.loss.toFixed(3)}${heldLoss === null ? '' : ` held-out ${heldLoss.toFixed(3)}`} ${m.tokens_per_second.toFixed(0)} tok/s`);
  }
  bar?.done();
  const finished = end === totalSteps;
  if (finished && start === totalSteps && heldEval.length) heldLoss = heldOutLoss(model, adapter, heldEval, cfg.sft.microBatchSize);
  if (finished) await writeDirAtomic(layout.adapter, (dir) => writeAdapter(dir));
  if (finished) await o.onTrained?.(model, adapter);
  dispose();
  return {
    steps: end,
    trainExamples: train.length,
    heldOutExamples: p.held.length,
    droppedTooLong: p.dropped,
    trimmed: p.trimmed,
    trainLoss,
    heldOutLoss: heldLoss,
    heldOutLossBefore: heldBefore,
    adapterDir: finished ? layout.adapter : '',
    examplesFile: p.file,
    seconds: (performance.now() - t0) / 1000,
  };
}
