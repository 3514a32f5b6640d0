// `gsteer model init --pretrain EXAMPLES`: train the BASE weights of a freshly initialized
// model (full-weight causal LM, not LoRA) on SFT examples, so the tiny demo model already
// speaks the turn grammar before LoRA SFT and GRPO (docs/history/demo-base.md, "The demo's
// budget": LoRA on a random base cannot get there in minutes).
// Every weight trains except the input embedding (the wasm backend has no gather
// gradient, method §14.1); the output head is untied (tie_word_embeddings: false, its own
// lm_head.weight) so it can train. AdamW, linear warmup then cosine over the step budget,
// global-norm clipping. The schedule depends on the step only, never on the clock, so a run
// the step cap ends is deterministic for a seed; the seconds cap only stops early. The result is
// written back in the HF layout loadModel reads, with tie_word_embeddings: false.
//
// Measured on the demo's examples (runs A-I, 2 cores, wasm): docs/history/demo-base.md, "The demo's
// budget". The committed demo base (models/tiny-demo) is made of this function's output for
// the recipe in cli/demo/base.ts (DEMO_BASE_STAGES, DEMO_BASE_ROUNDS).
import type { DrillShape } from './copy-drill.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { sha256File, writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { progressBar } from '../../util/progress.ts';
import { fromFloat32, type SafeTensor } from '../../model/io/dtype.ts';
import { writeSafetensors } from '../../model/io/safetensors.ts';
import { PROJ_NAMES } from '../../model/lora/types.ts';
import { AdamW } from '../optim/adamw.ts';
import { clipGradNorm } from '../optim/clip.ts';
import { lrAt } from '../optim/schedule.ts';
import type { Tokenizer } from '../../core/tokenizer.ts';
import { loadModel, type Qwen3Model } from '../../model/model.ts';
import { augmentWords, makeBatch, pretrainBatches, pretrainSequences, stepSequence, type SequenceOptions } from './data.ts';
import { areRefinerExamples } from './augment-qref.ts';
import { pretrainLoss } from './loss.ts';
import { PRETRAIN_RECORD } from '../../model/records.ts';
import { projWeightName, type ComputeWeights } from '../../model/weights.ts';

export interface PretrainOptions extends SequenceOptions {
  seed: number;
  /** Updates (cosine schedule length). */
  steps: number;
  /** Wall-clock stop (Infinity: none); it ends training early without changing the schedule. */
  seconds: number;
  batchSize: number;
  lr: number;
  warmup: number;
  weightDecay: number;
  maxGradNorm: number;
  /** Share of the sequences each update trains on with fresh copied values (copy augmentation, pretrain-augment.ts); 0 = none. */
  augment: number;
  /** Share of the sequences each update replaces by a copy drill (copy-drill.ts; QREF refiner examples only); 0 or absent = none. */
  drill?: number;
  /** Where a drill's names stand (copy-drill.ts DrillShape); absent = plain. */
  drillShape?: DrillShape;
  /** Also write the weights (and pretrain.json so far) every this many updates; 0 = only at the end. */
  saveEvery?: number;
  progress?: boolean;
  log?: (line: string) => void;
  /** Called with the trained in-memory model before it is written and disposed (tests). */
  onTrained?: (model: Qwen3Model) => void;
}

export interface PretrainResult {
  steps: number;
  sequences: number;
  tokens: number;
  /** Sequences trained on with fresh copied values. */
  augmented: number;
  /** Sequences that were copy drills. */
  drills: number;
  firstLoss: number;
  lastLoss: number; // mean of the last few updates
  seconds: number;
}

let run = 0;

/** Trainable copies of every weight but the embedding; `model` keeps owning the originals. */
export function trainable(w: ComputeWeights): { weights: ComputeWeights; vars: tf.Variable[] } {
  const vars: tf.Variable[] = [];
  const v = <T extends tf.Tensor>(t: T, name: string): T => {
    const x = tf.variable(t, true, `pretrain-${++run}/${name}`); // unique names: tfjs keeps a global registry
    vars.push(x);
    return x as unknown as T;
  };
  const weights: ComputeWeights = {
    embed: w.embed,
    norm: v(w.norm, 'norm'),
    lmHeadT: v(w.lmHeadT, 'lm_head'),
    layers: w.layers.map((l, i) => ({
      inputNorm: v(l.inputNorm, `${i}.input_layernorm`),
      postNorm: v(l.postNorm, `${i}.post_attention_layernorm`),
      qNorm: v(l.qNorm, `${i}.q_norm`),
      kNorm: v(l.kNorm, `${i}.k_norm`),
      projT: Object.fromEntries(PROJ_NAMES.map((m) => [m, v(l.projT[m], `${i}.${m}`)])) as ComputeWeights['layers'][number]['projT'],
    })),
  };
  return { weights, vars };
}

/** HF-layout tensors of a model (linear weights back to [out, in]). */
export function hfTensors(model: Qwen3Model): Map<string, SafeTensor> {
  const out = new Map<string, SafeTensor>();
  const put = (name: string, t: tf.Tensor, transpose = false) => {
    const x = transpose ? tf.transpose(t) : t;
    out.set(name, fromFloat32(Float32Array.from(x.dataSync() as Float32Array), [...x.shape]));
    if (x !== t) x.dispose();
  };
  const w = model.weights;
  put('model.embed_tokens.weight', w.embed);
  w.layers.forEach((l, i) => {
    put(`model.layers.${i}.input_layernorm.weight`, l.inputNorm);
    for (const m of PROJ_NAMES) put(projWeightName(i, m), l.projT[m], true);
    put(`model.layers.${i}.self_attn.q_norm.weight`, l.qNorm);
    put(`model.layers.${i}.self_attn.k_norm.weight`, l.kNorm);
    put(`model.layers.${i}.post_attention_layernorm.weight`, l.postNorm);
  });
  put('model.norm.weight', w.norm);
  put('lm_head.weight', w.lmHeadT, true);
  return out;
}

/** The records of the stages that already trained the model in `dir` (its pretrain.json), oldest first. */
function earlierStages(dir: string): unknown[] {
  const file = join(dir, PRETRAIN_RECORD);
  if (!existsSync(file)) return [];
  const { previous = [], ...last } = JSON.parse(readFileSync(file, 'utf8')) as { previous?: unknown[] };
  return [...previous, last];
}

/** Train the model in `dir` (untied, from `gsteer model init`) on `examples`; rewrite its weights in place. */
export async function pretrainModel(dir: string, examples: string, tok: Tokenizer, o: PretrainOptions): Promise<PretrainResult> {
  const log = o.log ?? ((l: string) => console.error(l));
  const t0 = performance.now();
  const base = await loadModel(dir);
  if (base.config.tieWordEmbeddings)
    throw new InputError(
      `${dir}/config.json: pretraining needs tie_word_embeddings: false (the input embedding stays frozen, the lm_head trains); create the model with gsteer model init --pretrain`,
    );
  const { train, examples: kept, heldOut, tooLong, extraAdded, extraHeldOut, extraInMain, extraRepeated } = pretrainSequences(tok, examples, o);
  const drill = o.drill ?? 0;
  const words = o.augment > 0 || drill > 0 ? augmentWords(kept) : [];
  if (drill > 0 && !(areRefinerExamples(kept) && words.length))
    throw new InputError(
      `${examples}: --pretrain-drill ${drill} needs QREF refiner examples (chat examples whose target is a refiner turn; rollout/qref/sft-example.ts) with names in their prompts, which the drills draw from; drop --pretrain-drill for these examples`,
    );
  const data = { train, examples: kept, words };
  const examplesSha256 = sha256File(examples);
  const extraSha256 = o.extra ? sha256File(o.extra) : undefined;
  const previous = earlierStages(dir);
  if (o.extra)
    log(
      `pretrain: ${o.extra}: ${extraAdded} more sequences; left out: ${extraHeldOut} whose prompt is held out, ${extraInMain} whose prompt ${examples} trains on, ${extraRepeated} repeated`,
    );
  log(
    `pretrain: ${train.length} sequences (${heldOut} held out, ${tooLong} longer than ${o.maxLen} left out), context ${o.context ?? 'full prompt'}${drill > 0 ? `, ${Math.round(100 * drill)}% copy drills${o.drillShape === 'prompt' ? ' in refiner prompts' : ''}` : ''}${o.augment > 0 ? `, ${Math.round(100 * o.augment)}%${drill > 0 ? ' of the others' : ''} with fresh copied values` : ''}, up to ${o.steps} updates of ${o.batchSize}${Number.isFinite(o.seconds) ? ` or ${o.seconds} s` : ''}`,
  );
  const { weights, vars } = trainable(base.weights);
  const model: Qwen3Model = { ...base, weights, dispose: () => {} };
  const opt = new AdamW(vars, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: o.weightDecay });
  const perEpoch = Math.ceil(train.length / o.batchSize);
  // by step alone, never by the clock: an earlier schedule that also decayed with elapsed
  // seconds made the same command write different weights on a loaded machine
  const schedule = { kind: 'cosine', baseLr: o.lr, warmupSteps: o.warmup, totalSteps: o.steps } as const;
  const bar = o.progress === false ? null : progressBar('pretrain', o.steps);
  const losses: number[] = [];
  let tokens = 0;
  let augmented = 0;
  let drills = 0;
  let step = 0;
  /** Weights (HF layout, atomic rename) and pretrain.json with what was done so far. */
  const save = (steps: number): PretrainResult => {
    writeSafetensors(join(dir, 'model.safetensors'), hfTensors(model), { format: 'pt' });
    const tail = losses.slice(-5);
    const r: PretrainResult = {
      steps,
      sequences: train.length,
      tokens,
      augmented,
      drills,
      firstLoss: losses[0] ?? NaN,
      lastLoss: tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length),
      seconds: (performance.now() - t0) / 1000,
    };
    writeFileAtomic(
      join(dir, PRETRAIN_RECORD),
      `${JSON.stringify({ examples, examplesSha256, extraSha256, backend: tf.getBackend(), ...o, log: undefined, onTrained: undefined, ...r, previous: previous.length ? previous : undefined }, null, 2)}\n`,
    );
    return r;
  };
  for (; step < o.steps && (performance.now() - t0) / 1000 < o.seconds; step++) {
    const idx = pretrainBatches(o.seed, Math.floor(step / perEpoch), train.length, o.batchSize)[step % perEpoch] as number[];
    const picked = idx.map((i, slot) => stepSequence(tok, model, data, i, o, step, slot));
    augmented += picked.filter((p) => p.augmented).length;
    drills += picked.filter((p) => p.drill).length;
    const batch = makeBatch(
      model,
      picked.map((p) => p.seq),
    );
    const lr = lrAt(step, schedule);
    const { value, grads } = tf.variableGrads(() => pretrainLoss(model, batch), vars);
    const g = vars.map((x) => grads[x.name]!);
    const clipped = clipGradNorm(g, o.maxGradNorm);
    opt.step(clipped.grads, lr);
    losses.push(value.dataSync()[0] as number);
    tf.dispose([value, ...g, ...clipped.grads]);
    tokens += batch.B * batch.T;
    bar?.tick(1, `loss ${losses.at(-1)!.toFixed(3)} ${(tokens / ((performance.now() - t0) / 1000)).toFixed(0)} tok/s`);
    if (o.saveEvery && (step + 1) % o.saveEvery === 0 && step + 1 < o.steps) save(step + 1);
  }
  bar?.done();
  o.onTrained?.(model);
  const r = save(step);
  log(`pretrain: wrote ${dir}/model.safetensors after ${step} updates`);
  opt.dispose();
  tf.dispose(vars);
  base.dispose();
  return r;
}
