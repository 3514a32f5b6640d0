// AdamW with decoupled weight decay, step for step as torch.optim.AdamW (method §5: the paper
// trains with AdamW, weight decay 0.01):
//   p <- p * (1 - lr * wd)
//   m <- b1 m + (1 - b1) g ;  v <- b2 v + (1 - b2) g^2
//   p <- p - (lr / (1 - b1^k)) * m / (sqrt(v) / sqrt(1 - b2^k) + eps)      (k = step, from 1)
// The state (step, m, v) round-trips through plain Float32Arrays, so a resumed run takes
// bitwise the same steps as an uninterrupted one (method §10).
import * as tf from '@tensorflow/tfjs';
import { InputError, assert } from '../../util/errors.ts';

export interface AdamWOptions {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

/** Serializable optimizer state; m[i] and v[i] belong to params[i]. */
export interface AdamWState {
  step: number;
  names: string[];
  shapes: number[][];
  m: Float32Array[];
  v: Float32Array[];
}

export class AdamW {
  private k = 0;
  private m: tf.Variable[];
  private v: tf.Variable[];

  constructor(
    readonly params: readonly tf.Variable[],
    readonly opts: AdamWOptions,
  ) {
    this.m = params.map((p) => tf.variable(tf.zerosLike(p), false));
    this.v = params.map((p) => tf.variable(tf.zerosLike(p), false));
  }

  /** Updates taken so far. */
  get stepCount(): number {
    return this.k;
  }

  /**
   * One update with learning rate `lr`; grads[i] is the gradient of params[i] (not disposed here).
   * `opts` overrides the constructor's for this step (a Tinker optim_step carries its AdamParams).
   */
  step(grads: readonly tf.Tensor[], lr: number, opts: AdamWOptions = this.opts): void {
    assert(grads.length === this.params.length, `AdamW.step: ${grads.length} grads for ${this.params.length} params`);
    this.k += 1;
    const { beta1, beta2, eps, weightDecay } = opts;
    const stepSize = lr / (1 - beta1 ** this.k);
    const bc2Sqrt = Math.sqrt(1 - beta2 ** this.k);
    tf.tidy(() => {
      this.params.forEach((p, i) => {
        const g = grads[i]!;
        const m = this.m[i]!;
        const v = this.v[i]!;
        const decayed = tf.mul(p, 1 - lr * weightDecay);
        const mNew = tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1));
        const vNew = tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2));
        const denom = tf.add(tf.div(tf.sqrt(vNew), bc2Sqrt), eps);
        m.assign(mNew);
        v.assign(vNew);
        p.assign(tf.sub(decayed, tf.mul(tf.div(mNew, denom), stepSize)));
      });
    });
  }

  state(): AdamWState {
    return {
      step: this.k,
      names: this.params.map((p) => p.name),
      shapes: this.params.map((p) => [...p.shape]),
      m: this.m.map((t) => Float32Array.from(t.dataSync() as Float32Array)),
      v: this.v.map((t) => Float32Array.from(t.dataSync() as Float32Array)),
    };
  }

  /** Restore a saved state; shapes must match the params this optimizer was built over. */
  load(s: AdamWState): void {
    if (s.m.length !== this.params.length || s.v.length !== this.params.length)
      throw new InputError(
        `optimizer state has ${s.m.length} tensors but the adapter has ${this.params.length} variables; resume with the same LoRA config (r, targetModules) the checkpoint was written with`,
      );
    tf.tidy(() =>
      this.params.forEach((p, i) => {
        const want = p.shape.join('x');
        const got = (s.shapes[i] ?? []).join('x');
        if (want !== got)
          throw new InputError(
            `optimizer state tensor ${i} (${s.names[i] ?? '?'}) has shape [${got}] but the variable has [${want}]; resume with the same LoRA config the checkpoint was written with`,
          );
        this.m[i]!.assign(tf.tensor(s.m[i]!, p.shape, 'float32'));
        this.v[i]!.assign(tf.tensor(s.v[i]!, p.shape, 'float32'));
      }),
    );
    this.k = s.step;
  }

  dispose(): void {
    tf.dispose([...this.m, ...this.v]);
  }
}
