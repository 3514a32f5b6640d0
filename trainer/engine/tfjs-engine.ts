// gsteer's own training engine (method §5.13): Tinker's forward / forward_backward / optim_step /
// save / load on the tfjs Qwen3 + one LoRA adapter, in process. `gsteer trainer serve` puts it
// behind the Tinker HTTP API; tests and benches call it directly.
//   forward_backward: each datum's target logprobs (Policy.score: the LoRA forward, under the
//     grammar masks the datum was sampled with, over its prefix tree when asked), the built-in
//     loss's elementwise values (losses.ts), their SUM's gradient added to the accumulator;
//     micro-batches of `microBatchSize` datums, as the in-process step cuts them (same order, same
//     dropout seeds), so the same datums give the same gradient bits.
//   optim_step: clip the accumulated gradient's global norm (grad_clip_norm; 0 = off), one AdamW
//     step with the call's AdamParams (none when the norm is not finite: nonfinite_skipped 1),
//     clear the accumulator.
//   save / load: the PEFT adapter files + optimizer.json (float32 moments as JSON numbers: a
//     byte-exact round trip, trainer/optim/state-file.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../../util/errors.ts';
import type { LoraConfig } from '../../configs/schema.ts';
import type { Qwen3Model } from '../../model/model.ts';
import type { LoraAdapter } from '../../model/lora/types.ts';
import { createLora, loadPeftAdapter, savePeftAdapter } from '../../model/lora/index.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import { treeLogprobs } from '../../model/prefix-logprobs.ts';
import { prefixOrder } from '../../model/prefix-tree.ts';
import { AdamW, type AdamWOptions } from '../optim/adamw.ts';
import { clipGradNorm, globalNorm } from '../optim/clip.ts';
import { readOptimizerFile, writeOptimizerFile } from '../optim/state-file.ts';
import { ReplayPool } from '../../structured/replay-pool.ts';
import type { PolicyGrammar } from '../../structured/constraint-spec.ts';
import type { TokenMasks } from '../../model/token-masks.ts';
import { microBatches, PAD_ID, padRows } from '../step-batch.ts';
import { checkDatum, columnRow, isIdle, maskedTurn, scoredRow, sequenceOf } from './datum.ts';
import { elementwiseLoss, lossConfig } from './losses.ts';
import type { AdamParams, EngineDatum, ForwardBackwardOptions, ForwardBackwardResult, TrainingEngine } from './types.ts';

export const OPTIMIZER_FILE = 'optimizer.json';
/** gsteer's diagnostic: the call's compute time in the engine (the rest of a call's wall time is the contract's). */
export const ENGINE_SECONDS = 'time/engine_seconds';

export interface TfjsEngineOptions {
  /** base_model_name_or_path written into saved adapter configs (the model folder). */
  baseModel: string;
  /** Datums per forward/backward (grpo.microBatchSize); gradients of the parts are summed. */
  microBatchSize: number;
  /** Per-layer activation recomputation (grpo.gradientCheckpointing): same gradients, less memory. */
  recompute?: boolean;
  /** The grammars constrained datums were sampled under (the environment's, Environment.grammars; every one for gsteer trainer serve); none: a constrained datum is refused. */
  grammars?: readonly PolicyGrammar[];
  /** Replays constrained datums' masks; default a pool of its own over `grammars`, started on the first constrained datum. */
  replayPool?: ReplayPool;
}

const adamOf = (p: AdamParams): AdamWOptions => ({ beta1: p.beta1, beta2: p.beta2, eps: p.eps, weightDecay: p.weight_decay });
/** Tinker's AdamParams defaults (0.25 SDK); an optimizer saved before its first step is built with them. */
const TINKER_ADAM: AdamWOptions = { beta1: 0.9, beta2: 0.95, eps: 1e-12, weightDecay: 0 };

/** A batch's per-datum inputs as scoring rows [B][N + 1] (column 0 = 0). */
interface Columns {
  weights: number[][];
  logprobs: number[][];
  advantages: number[][];
  scored: number[][];
}

interface PartValues {
  logprobs: number[][];
  loss: number[][];
  entropy?: number[][];
}

export class TfjsEngine implements TrainingEngine {
  private grads: tf.Tensor[] | null = null;
  private optimizer: AdamW | null = null;
  private ownPool: ReplayPool | null = null;

  constructor(
    readonly model: Qwen3Model,
    private adapter: LoraAdapter,
    private readonly o: TfjsEngineOptions,
  ) {}

  /** A fresh LoRA (B = 0, A seeded) on `model` (Tinker create_model: the rank; gsteer's alpha, dropout, targets). */
  static create(model: Qwen3Model, lora: LoraConfig, seed: number, o: TfjsEngineOptions): TfjsEngine {
    return new TfjsEngine(model, createLora(model, lora, seed), o);
  }

  /** The current adapter (read-only use: sampling, fingerprints). */
  get lora(): LoraAdapter {
    return this.adapter;
  }

  /** optim_steps taken (0 before the first). */
  get steps(): number {
    return this.optimizer?.stepCount ?? 0;
  }

  async forwardBackward(data: readonly EngineDatum[], o: ForwardBackwardOptions): Promise<ForwardBackwardResult> {
    const t0 = performance.now();
    const g = o.gsteer ?? {};
    const cfg = lossConfig(o.lossFn, o.config);
    if (data.length === 0) throw new InputError(`${o.forwardOnly ? 'forward' : 'forward_backward'}: no datums; send at least one`);
    if (g.reference && !o.forwardOnly) throw new InputError('gsteer reference scoring is forward-only: the base model has no trainable weights; call forward');
    data.forEach((d, i) => checkDatum(d, i, o.lossFn));
    const seqs = data.map(sequenceOf); // [B][N + 1]
    const row = (key: 'weights' | 'logprobs' | 'advantages') => data.map((d) => columnRow(d.inputs[key], d.tokens.length));
    const x: Columns = { weights: row('weights'), logprobs: row('logprobs'), advantages: row('advantages'), scored: data.map((d) => scoredRow(d, o.lossFn)) };
    const replay = data.some((d) => d.constraint)
      ? this.pool().start(
          data.map((d, i) => maskedTurn(d, seqs[i]!)),
          this.model,
        )
      : null;
    const values: PartValues = { logprobs: [], loss: [], entropy: g.withEntropy ? [] : undefined };
    let lossSum = 0;
    try {
      const order = g.prefixGrouping ? prefixOrder(seqs) : null; // micro-batches of sequences sharing the longest prefixes
      microBatches(data.length, this.o.microBatchSize).forEach((part, k) => {
        const idx = order ? part.map((i) => order[i]!) : part;
        const dropoutSeed = g.dropoutSeed === undefined ? undefined : g.dropoutSeed + k;
        const run = (rows: number[]) => () => this.partLoss(seqs, rows, x, o, cfg, { dropoutSeed, masks: replay?.masks }, values);
        // A datum whose loss input is all 0 has loss and gradient 0: scored without a tape, apart from the
        // others (as the in-process step's idle rows, trainer/step.ts splitIdle). `forward` splits the same
        // way, so a forward and a forward_backward of the same datums score the same layouts (dropout, trees).
        const idle = idx.filter((b) => isIdle(data[b]!, o.lossFn));
        const active = idx.filter((b) => !isIdle(data[b]!, o.lossFn));
        const untaped = (rows: number[]) => {
          const s = tf.tidy(run(rows));
          lossSum += s.dataSync()[0]!;
          s.dispose();
        };
        if (idle.length > 0) untaped(idle);
        if (active.length > 0 && o.forwardOnly) untaped(active);
        else if (active.length > 0) this.accumulate(run(active), (v) => (lossSum += v));
      });
      const stats = replay?.stats() ?? {};
      const outputs = data.map((d, b) => ({
        logprobs: values.logprobs[b]!,
        elementwise_loss: values.loss[b]!,
        ...(values.entropy ? { entropy: values.entropy[b]! } : {}),
        ...(d.scored ? { scored: x.scored[b]!.slice(1) } : {}),
      }));
      return { outputs, metrics: { 'loss:sum': lossSum, ...stats, [ENGINE_SECONDS]: (performance.now() - t0) / 1000 } };
    } finally {
      if (replay) this.pool().release(replay);
    }
  }

  /** Score datums `idx` ([b, T] padded, or over their prefix tree), the loss's elementwise values and their sum. */
  private partLoss(
    seqs: number[][],
    idx: number[],
    x: Columns,
    o: ForwardBackwardOptions,
    cfg: Record<string, number>,
    p: { dropoutSeed?: number; masks?: readonly (TokenMasks | null)[] },
    values: PartValues,
  ): tf.Scalar {
    const g = o.gsteer ?? {};
    const ids = g.prefixGrouping ? idx.map((b) => seqs[b]!) : padRows(seqs, idx, PAD_ID);
    const masks = p.masks ? idx.map((b) => p.masks![b] ?? null) : undefined;
    const score = g.prefixGrouping ? treeLogprobs : tokenLogprobs;
    const opts = {
      training: p.dropoutSeed !== undefined,
      dropoutSeed: p.dropoutSeed,
      recompute: this.o.recompute ?? false,
      withEntropy: g.withEntropy ?? false,
    };
    const { logprobs, entropy } = score(this.model, g.reference ? null : this.adapter, { inputIds: ids, masks, scored: padRows(x.scored, idx, 0) }, opts); // [b, T]
    const t2 = (rows: number[][]) => tf.tensor2d(padRows(rows, idx, 0), undefined, 'float32'); // [b, T]
    const el = elementwiseLoss(
      o.lossFn,
      logprobs,
      { weights: t2(x.weights), logprobs: t2(x.logprobs), advantages: t2(x.advantages), scored: t2(x.scored) },
      cfg,
    ); // [b, T]
    const [lp, ls, ent] = [logprobs.arraySync(), el.arraySync() as number[][], entropy?.arraySync()];
    idx.forEach((b, i) => {
      const cols = (r: number[]) => r.slice(1, seqs[b]!.length); // columns 1..N = positions 0..N-1
      values.logprobs[b] = cols(lp[i]!);
      values.loss[b] = cols(ls[i]!);
      if (values.entropy && ent) values.entropy[b] = cols(ent[i]!);
    });
    return tf.sum(el) as tf.Scalar;
  }

  /** Add the gradient of `loss` to the accumulator (the sum over forward_backward calls until optim_step). */
  private accumulate(loss: () => tf.Scalar, onValue: (v: number) => void): void {
    const vars = this.adapter.variables();
    const { value, grads } = tf.variableGrads(loss, vars);
    onValue(value.dataSync()[0]!);
    // a variable the loss does not reach (no loss position in the part) has no entry
    const gs = vars.map((v) => grads[v.name] ?? tf.zerosLike(v));
    const prev = this.grads;
    this.grads = prev ? prev.map((a, i) => tf.add(a, gs[i]!)) : gs;
    if (prev) tf.dispose([...prev, ...gs]);
    tf.dispose(value);
  }

  /** Copies of the accumulated gradient, aligned with the adapter's variables (null: none since the last optim_step). */
  gradients(): tf.Tensor[] | null {
    return this.grads ? this.grads.map((t) => t.clone()) : null;
  }

  async optimStep(adam: AdamParams): Promise<{ metrics: Record<string, number> }> {
    if (!(adam.learning_rate >= 0) || !(adam.grad_clip_norm >= 0))
      throw new InputError(
        `optim_step: learning_rate ${adam.learning_rate} and grad_clip_norm ${adam.grad_clip_norm} must be >= 0 (grad_clip_norm 0 = no clipping)`,
      );
    const t0 = performance.now();
    const vars = this.adapter.variables();
    const grads = this.grads ?? vars.map((v) => tf.zerosLike(v));
    this.grads = null;
    const opts = adamOf(adam);
    this.optimizer ??= new AdamW(vars, opts);
    const clipped = adam.grad_clip_norm > 0 ? clipGradNorm(grads, adam.grad_clip_norm) : { grads, norm: globalNorm(grads) };
    // a NaN / infinite gradient would reach every weight and moment: no step, as the in-process step (trainer/step.ts)
    const finite = Number.isFinite(clipped.norm);
    if (finite) this.optimizer.step(clipped.grads, adam.learning_rate, opts);
    tf.dispose(clipped.grads === grads ? grads : [...grads, ...clipped.grads]);
    return {
      metrics: {
        grad_norm: clipped.norm,
        learning_rate: adam.learning_rate,
        'optim/steps': this.optimizer.stepCount,
        nonfinite_skipped: finite ? 0 : 1,
        [ENGINE_SECONDS]: (performance.now() - t0) / 1000,
      },
    };
  }

  async save(dir: string, o: { optimizer: boolean }): Promise<void> {
    savePeftAdapter(this.adapter, dir, this.o.baseModel);
    if (o.optimizer) writeOptimizerFile(join(dir, OPTIMIZER_FILE), (this.optimizer ??= new AdamW(this.adapter.variables(), TINKER_ADAM)));
  }

  async load(dir: string, o: { optimizer: boolean }): Promise<void> {
    if (o.optimizer && !existsSync(join(dir, OPTIMIZER_FILE)))
      throw new InputError(
        `${dir}: no ${OPTIMIZER_FILE}; this state was saved without the optimizer (save_weights_for_sampler or an adapter folder): load it without the optimizer`,
      );
    const next = loadPeftAdapter(dir, this.model);
    this.reset(next);
    if (o.optimizer) readOptimizerFile(join(dir, OPTIMIZER_FILE), (this.optimizer = new AdamW(next.variables(), TINKER_ADAM)));
  }

  /** Use `next` as the adapter: fresh optimizer state, no accumulated gradient. */
  private reset(next: LoraAdapter): void {
    tf.dispose(this.grads ?? []);
    this.grads = null;
    this.optimizer?.dispose();
    this.optimizer = null;
    if (next !== this.adapter) this.adapter.dispose();
    this.adapter = next;
  }

  private pool(): ReplayPool {
    return this.o.replayPool ?? (this.ownPool ??= new ReplayPool(this.o.grammars ?? []));
  }

  dispose(): void {
    tf.dispose(this.grads ?? []);
    this.grads = null;
    this.optimizer?.dispose();
    this.adapter.dispose();
    void this.ownPool?.close();
  }
}
