// The KV of every decoding sequence of a batched step in one tensor per layer, so a decode
// step of S sequences runs the same dozen attention ops as one sequence: tfjs spends ~15 us
// per op, and per-sequence attention (8 ops a layer) made each extra sequence cost a third
// of a one-sequence step on the tiny model.
//
// Layout per layer: k, v [S*KV, cap, hd]; slot j's kv head h is row j*KV + h, its positions
// [0, L_j) hold its keys/values, zeros beyond. A step writes each slot's new k/v at L_j
// (tensorScatterUpdate), then q k^T over all cap positions, -Infinity on the padding, an
// exp/sum softmax and p v. That is exactly one query row's attention over its own L_j + 1
// keys (batch-step.ts `singleRowAttention`, also used for a one-id prompt segment): the
// scalar-loop matmuls compute each output alone and add the padding's exact zeros in order,
// and tfjs Sum is a sequential loop (tests/model/batch-invariance.test.ts). So a
// slot's numbers depend neither on cap nor on the other slots.
import * as tf from '@tensorflow/tfjs';
import type { CacheState } from './kv-cache.ts';
import type { Qwen3Model } from './model.ts';

const PAGE = 64; // cap grows and shrinks in multiples of this, keeping up to a page of headroom

/** softmax over the last axis as exp / sum, summed in order (so trailing -Infinity keys change nothing). */
export function orderedSoftmax(x: tf.Tensor): tf.Tensor {
  const e = tf.exp(tf.sub(x, tf.max(x, -1, true)));
  return tf.div(e, tf.sum(e, -1, true));
}

export class DecodePool {
  private slots: CacheState[] = [];
  private layers: { k: tf.Tensor; v: tf.Tensor }[] = [];
  private cap = 0;

  constructor(private readonly model: Qwen3Model) {}

  /** Move these caches into the pool (their own tensors are freed) and make room for one more position each. */
  admit(states: readonly CacheState[]): void {
    const { numKeyValueHeads: KV, headDim: hd } = this.model.config;
    const joining = states.filter((st) => st.pool !== this);
    const need = Math.max(...[...this.slots, ...joining].map((st) => st.length + 1));
    if (need > this.cap) this.resize(PAGE * Math.ceil((need + PAGE) / PAGE));
    if (!joining.length) return;
    const pad = (t: tf.Tensor, len: number) =>
      len < this.cap
        ? tf.pad(t, [
            [0, 0],
            [0, this.cap - len],
            [0, 0],
          ])
        : t;
    this.layers = this.model.weights.layers.map((_, i) => {
      const old = this.layers[i];
      const add = (which: 'k' | 'v') =>
        tf.tidy(() =>
          tf.concat(
            [...(old ? [old[which]] : []), ...joining.map((st) => (st.layers[i] ? pad(st.layers[i]![which], st.length) : tf.zeros([KV, this.cap, hd])))],
            0,
          ),
        );
      const next = { k: add('k'), v: add('v') };
      if (old) old.k.dispose(), old.v.dispose();
      return next;
    });
    for (const st of joining) {
      for (const l of st.layers) l && (l.k.dispose(), l.v.dispose());
      st.layers = st.layers.map(() => null);
      st.pool = this;
      this.slots.push(st);
    }
  }

  /** A disposed cache leaves; the pool shrinks its capacity when most of it is padding. */
  remove(st: CacheState): void {
    const j = this.slots.indexOf(st);
    if (j < 0) return;
    st.pool = null;
    this.slots.splice(j, 1);
    if (!this.slots.length) return this.clear();
    const KV = this.model.config.numKeyValueHeads;
    const rows = tf.tensor1d(
      this.slots.flatMap((_, s) => Array.from({ length: KV }, (__, h) => (s < j ? s : s + 1) * KV + h)),
      'int32',
    );
    this.layers = this.layers.map(({ k, v }) => {
      const next = { k: tf.gather(k, rows), v: tf.gather(v, rows) };
      k.dispose();
      v.dispose();
      return next;
    });
    rows.dispose();
    const need = Math.max(...this.slots.map((s) => s.length + 1));
    if (PAGE * Math.ceil((need + PAGE) / PAGE) * 2 <= this.cap) this.resize(PAGE * Math.ceil((need + PAGE) / PAGE));
  }

  /** Positions [start, end) of a pooled cache, as new tensors [KV, end - start, hd] per layer. */
  slice(st: CacheState, start: number, end: number): { k: tf.Tensor; v: tf.Tensor }[] {
    const { numKeyValueHeads: KV, headDim: hd } = this.model.config;
    const row = this.slots.indexOf(st) * KV;
    return this.layers.map(({ k, v }) => ({ k: tf.slice(k, [row, start, 0], [KV, end - start, hd]), v: tf.slice(v, [row, start, 0], [KV, end - start, hd]) }));
  }

  /**
   * One layer's attention for the pooled caches `states` (admitted before), each with one new
   * row: q [D, H, hd] (rope'd, scaled), k, v [D, KV, hd], in the order of `states`. Writes the
   * new k/v into the layer (the pool keeps the new tensors: call inside tf.tidy, `keep` is
   * applied here) and returns [D, H, hd].
   */
  attend(layer: number, states: readonly CacheState[], q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, mask: tf.Tensor): tf.Tensor {
    const { numAttentionHeads: H, numKeyValueHeads: KV, headDim: hd } = this.model.config;
    const rep = H / KV;
    const D = states.length;
    const slotOf = states.map((st) => this.slots.indexOf(st));
    const S = this.slots.length;
    const at = tf.tensor2d(
      slotOf.flatMap((j, d) => Array.from({ length: KV }, (_, h) => [j * KV + h, (states[d] as CacheState).length])),
      [D * KV, 2],
      'int32',
    );
    const old = this.layers[layer] as { k: tf.Tensor; v: tf.Tensor };
    const K = tf.keep(tf.tensorScatterUpdate(old.k, at, tf.reshape(k, [D * KV, hd]))); // [S*KV, cap, hd]
    const V = tf.keep(tf.tensorScatterUpdate(old.v, at, tf.reshape(v, [D * KV, hd])));
    old.k.dispose();
    old.v.dispose();
    this.layers[layer] = { k: K, v: V };
    const inOrder = D === S && slotOf.every((j, d) => j === d);
    const qAll = inOrder ? q : tf.scatterND(tf.tensor2d(slotOf, [D, 1], 'int32'), q, [S, H, hd]); // slots not stepping: zero queries, results unused
    const probs = orderedSoftmax(tf.add(tf.matMul(tf.reshape(qAll, [S * KV, rep, hd]), K, false, true), mask)); // [S*KV, rep, cap]
    const ctx = tf.reshape(tf.matMul(probs, V), [S, H, hd]);
    return inOrder ? ctx : tf.gather(ctx, tf.tensor1d(slotOf, 'int32'));
  }

  /** Additive mask [S*KV, 1, cap] for a step where `states` each add one position: 0 up to and including it, -Infinity after. */
  stepMask(states: readonly CacheState[]): tf.Tensor {
    const KV = this.model.config.numKeyValueHeads;
    const stepping = new Set(states);
    const m = new Float32Array(this.slots.length * KV * this.cap);
    this.slots.forEach((st, j) => {
      const valid = st.length + (stepping.has(st) ? 1 : 0);
      for (let h = 0; h < KV; h++) m.fill(-Infinity, (j * KV + h) * this.cap + valid, (j * KV + h + 1) * this.cap);
    });
    return tf.tensor3d(m, [this.slots.length * KV, 1, this.cap]);
  }

  private resize(cap: number): void {
    const { numKeyValueHeads: KV, headDim: hd } = this.model.config;
    const rows = this.slots.length * KV;
    this.layers = this.layers.map(({ k, v }) => {
      const fit = (t: tf.Tensor) =>
        cap > this.cap
          ? tf.pad(t, [
              [0, 0],
              [0, cap - this.cap],
              [0, 0],
            ])
          : tf.slice(t, [0, 0, 0], [rows, cap, hd]);
      const next = { k: fit(k), v: fit(v) };
      k.dispose();
      v.dispose();
      return next;
    });
    this.cap = cap;
  }

  private clear(): void {
    for (const { k, v } of this.layers) k.dispose(), v.dispose();
    this.layers = [];
    this.cap = 0;
  }
}

const pools = new WeakMap<Qwen3Model, DecodePool>();

/** The model's decode pool (one per model: every decoding sequence of its batched steps). */
export function decodePool(model: Qwen3Model): DecodePool {
  let p = pools.get(model);
  if (!p) pools.set(model, (p = new DecodePool(model)));
  return p;
}
