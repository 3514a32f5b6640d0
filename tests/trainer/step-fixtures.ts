// A small differentiable Policy for the train-step tests: a bigram language model
// logits(next | prev) = emb[prev] @ W + bias with a frozen random embedding and trainable
// W [d, V] and bias [V]. Small enough to check the step's bookkeeping exactly.
import * as tf from '@tensorflow/tfjs';
import type { Policy } from '../../trainer/policy.ts';
import { Rng } from '../../util/rng.ts';
import { makeModel, type Qwen3Model } from '../../model/model.ts';
import type { Qwen3Config } from '../../model/config.ts';
import { projShape } from '../../model/weights.ts';
import { PROJ_NAMES, type ProjName } from '../../model/lora/types.ts';

export function bigramPolicy(V: number, d: number, seed: number): Policy & { W: tf.Variable; bias: tf.Variable } {
  const rng = new Rng(seed);
  const randn = (n: number, scale: number) => Float32Array.from({ length: n }, () => rng.normal() * scale);
  const emb = tf.tensor2d(randn(V * d, 1), [V, d]);
  const W = tf.variable(tf.tensor2d(randn(d * V, 0.3), [d, V]));
  const bias = tf.variable(tf.zeros([V]));
  return {
    W,
    bias,
    variables: () => [W, bias],
    score(inputIds, opts) {
      return tf.tidy(() => {
        const ids = tf.tensor2d(inputIds, undefined, 'int32'); // [B, T]
        const [B, T] = ids.shape;
        const prev = tf.slice(ids, [0, 0], [B, T - 1]); // [B, T-1]
        const next = tf.slice(ids, [0, 1], [B, T - 1]); // [B, T-1]
        const h = tf.reshape(tf.gather(emb, tf.reshape(prev, [-1])), [B * (T - 1), d]); // [B(T-1), d]
        const logits = tf.add(tf.matMul(h, W), bias); // [B(T-1), V]
        const logSm = tf.logSoftmax(logits); // [B(T-1), V]
        const picked = tf.sum(tf.mul(logSm, tf.oneHot(tf.reshape(next, [-1]), V)), 1); // [B(T-1)]
        const lp = tf.concat([tf.zeros([B, 1]), tf.reshape(picked, [B, T - 1])], 1) as tf.Tensor2D; // [B, T]
        if (!opts.withEntropy) return { logprobs: lp };
        const ent = tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), 1)); // [B(T-1)]
        return { logprobs: lp, entropy: tf.concat([tf.zeros([B, 1]), tf.reshape(ent, [B, T - 1])], 1) as tf.Tensor2D };
      });
    },
  };
}

/** The shape of the trainer tests' tiny random Qwen3 (2 layers, d 32, 48 ids). */
export const TINY_QWEN3: Qwen3Config = {
  vocabSize: 48,
  hiddenSize: 32,
  intermediateSize: 64,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 128,
};

/** A randomly initialized Qwen3-shaped model (weights ~ N(0, 0.02), norms 1), in memory. */
export function randomQwen3(cfg: Qwen3Config, seed: number, lmHeadScale = 0.02): Qwen3Model {
  const rng = new Rng(seed);
  const randn = (shape: [number, number], scale = 0.02) =>
    tf.tensor2d(
      Float32Array.from({ length: shape[0] * shape[1] }, () => rng.normal() * scale),
      shape,
    );
  const ones = (n: number) => tf.ones([n]) as tf.Tensor1D;
  const layers = Array.from({ length: cfg.numHiddenLayers }, () => ({
    inputNorm: ones(cfg.hiddenSize),
    postNorm: ones(cfg.hiddenSize),
    qNorm: ones(cfg.headDim),
    kNorm: ones(cfg.headDim),
    proj: Object.fromEntries(PROJ_NAMES.map((m) => [m, randn(projShape(cfg, m))])) as Record<ProjName, tf.Tensor2D>,
  }));
  const embed = randn([cfg.vocabSize, cfg.hiddenSize], 1);
  return makeModel(
    '(random)',
    cfg,
    { embed, layers, norm: ones(cfg.hiddenSize), lmHead: cfg.tieWordEmbeddings ? embed : randn([cfg.vocabSize, cfg.hiddenSize], lmHeadScale) },
    null,
  );
}
