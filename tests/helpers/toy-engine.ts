// A small, real TrainingEngine for protocol tests (trainer/engine/types.ts), standing in for
// gsteer's tfjs engine where a test exercises the wire, not the model: a bigram model
// logits[t] = W[tokens[t]] over a vocabulary of V ids, W [V, V] trained directly. Tinker's
// cross_entropy (L = -sum w_t logp_t) and importance_sampling (L = -sum exp(logp_t - old_t) A_t)
// with exact gradients, accumulation over calls, AdamW (torch.optim.AdamW, Tinker's defaults),
// grad_clip_norm, and save/load of W and the Adam moments as JSON. `log` records the calls in
// the order the engine ran them; `gate` (when set) holds each call until released.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../util/errors.ts';
import type { AdamParams, EngineDatum, ForwardBackwardOptions, ForwardBackwardResult, TrainingEngine } from '../../trainer/engine/types.ts';
import type { SampleResult } from '../../trainer/tinker/sample.ts';
import type { Sampler, SamplerRequest } from '../../trainer/service/types.ts';
import { Rng } from '../../util/rng.ts';

export const TOY_VOCAB = 16;

/** log_softmax of row `prev` of W. */
export function toyLogprobs(W: Float64Array, prev: number): Float64Array {
  const V = TOY_VOCAB;
  const row = W.subarray(prev * V, prev * V + V);
  const max = Math.max(...row);
  const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
  return Float64Array.from(row, (x) => x - lse);
}

export class ToyEngine implements TrainingEngine {
  W: Float64Array;
  private grad: Float64Array;
  private m: Float64Array;
  private v: Float64Array;
  private step = 0;
  readonly log: string[] = [];
  gate: Promise<void> | null = null;
  disposed = false;

  constructor(seed: number) {
    const rng = new Rng(seed);
    const n = TOY_VOCAB * TOY_VOCAB;
    this.W = Float64Array.from({ length: n }, () => (rng.next() - 0.5) * 0.2);
    this.grad = new Float64Array(n);
    this.m = new Float64Array(n);
    this.v = new Float64Array(n);
  }

  async forwardBackward(data: readonly EngineDatum[], o: ForwardBackwardOptions): Promise<ForwardBackwardResult> {
    if (this.gate) await this.gate;
    this.log.push(o.forwardOnly ? 'forward' : `forward_backward:${o.lossFn}`);
    if (o.lossFn !== 'cross_entropy' && o.lossFn !== 'importance_sampling')
      throw new InputError(`the toy engine computes cross_entropy and importance_sampling only, not ${o.lossFn}`);
    let total = 0;
    const outputs = data.map((d) => {
      const logprobs: number[] = [];
      const loss: number[] = [];
      d.tokens.forEach((prev, t) => {
        const target = d.inputs.target_tokens[t] as number;
        if (prev >= TOY_VOCAB || target >= TOY_VOCAB) throw new InputError(`token ${Math.max(prev, target)} is outside the toy vocabulary [0, ${TOY_VOCAB})`);
        const lp = toyLogprobs(this.W, prev);
        const l = lp[target] as number;
        // dL/dlogp_t, then dlogp_t / dW[prev, j] = 1[j = target] - p_j
        let dl: number;
        if (o.lossFn === 'cross_entropy') {
          const w = d.inputs.weights?.[t] ?? 1;
          loss.push(-w * l);
          dl = -w;
        } else {
          const ratio = Math.exp(l - (d.inputs.logprobs?.[t] ?? 0));
          const a = d.inputs.advantages?.[t] ?? 0;
          loss.push(-ratio * a);
          dl = -ratio * a;
        }
        logprobs.push(l);
        total += loss[loss.length - 1] as number;
        if (!o.forwardOnly) for (let j = 0; j < TOY_VOCAB; j++) this.grad[prev * TOY_VOCAB + j]! += dl * ((j === target ? 1 : 0) - Math.exp(lp[j] as number));
      });
      return { logprobs, elementwise_loss: loss };
    });
    return { outputs, metrics: { 'loss:sum': total } };
  }

  async optimStep(a: AdamParams): Promise<{ metrics: Record<string, number> }> {
    if (this.gate) await this.gate;
    this.log.push('optim_step');
    const norm = Math.sqrt(this.grad.reduce((s, g) => s + g * g, 0));
    const scale = a.grad_clip_norm > 0 && norm > a.grad_clip_norm ? a.grad_clip_norm / norm : 1;
    this.step++;
    for (let i = 0; i < this.W.length; i++) {
      const g = (this.grad[i] as number) * scale;
      this.m[i] = a.beta1 * (this.m[i] as number) + (1 - a.beta1) * g;
      this.v[i] = a.beta2 * (this.v[i] as number) + (1 - a.beta2) * g * g;
      const mh = (this.m[i] as number) / (1 - a.beta1 ** this.step);
      const vh = (this.v[i] as number) / (1 - a.beta2 ** this.step);
      this.W[i] = (this.W[i] as number) * (1 - a.learning_rate * a.weight_decay) - (a.learning_rate * mh) / (Math.sqrt(vh) + a.eps);
    }
    this.grad.fill(0);
    return { metrics: { 'grad_norm:mean': norm } };
  }

  async save(dir: string, o: { optimizer: boolean }): Promise<void> {
    this.log.push(`save:${o.optimizer}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'toy_adapter.json'), JSON.stringify(Array.from(this.W)));
    if (o.optimizer) writeFileSync(join(dir, 'toy_optimizer.json'), JSON.stringify({ step: this.step, m: Array.from(this.m), v: Array.from(this.v) }));
  }

  async load(dir: string, o: { optimizer: boolean }): Promise<void> {
    this.log.push(`load:${o.optimizer}`);
    this.W = Float64Array.from(JSON.parse(readFileSync(join(dir, 'toy_adapter.json'), 'utf8')) as number[]);
    this.grad.fill(0);
    if (o.optimizer) {
      const s = JSON.parse(readFileSync(join(dir, 'toy_optimizer.json'), 'utf8')) as { step: number; m: number[]; v: number[] };
      [this.step, this.m, this.v] = [s.step, Float64Array.from(s.m), Float64Array.from(s.v)];
    } else [this.step, this.m, this.v] = [0, new Float64Array(this.W.length), new Float64Array(this.W.length)];
  }

  dispose(): void {
    this.disposed = true;
  }
}

/** Samples the toy model saved in an adapter folder (or the seed-0 base): logprobs are the model's own (temperature 1, raw). */
export class ToySampler implements Sampler {
  calls = 0;
  async sample(r: SamplerRequest): Promise<SampleResult> {
    this.calls++;
    const W = r.adapterDir ? Float64Array.from(JSON.parse(readFileSync(join(r.adapterDir, 'toy_adapter.json'), 'utf8')) as number[]) : new ToyEngine(0).W;
    const rng = new Rng(r.seed ?? 1);
    const sequences = Array.from({ length: r.numSamples }, () => {
      const tokens: number[] = [];
      const logprobs: number[] = [];
      let prev = r.prompt[r.prompt.length - 1] as number;
      for (let k = 0; k < r.maxTokens; k++) {
        const lp = toyLogprobs(W, prev);
        let u = rng.next();
        let next = TOY_VOCAB - 1;
        for (let j = 0; j < TOY_VOCAB; j++)
          if ((u -= Math.exp(lp[j] as number)) < 0) {
            next = j;
            break;
          }
        tokens.push(next);
        logprobs.push(lp[next] as number);
        prev = next;
        if (r.stopTokens.includes(next)) return { tokens, logprobs, stopReason: 'stop' as const };
      }
      return { tokens, logprobs, stopReason: 'length' as const };
    });
    return { sequences, promptLogprobs: null, promptCacheHitTokens: 0 };
  }
  async close(): Promise<void> {}
}
