// Per-token logprobs of a micro-batch computed over its prefix tree (method §5.11; issue 22):
// every token of the tree (prefix-tree.ts) is one row of a flat forward [R, D], so a prefix
// shared by several sequences is computed once, forward and backward. Row-wise work (norms,
// projections, LoRA, MLP) runs once over all R rows (row-layer.ts); a node's queries attend to
// its ancestors' keys/values and its own, causally, which is exactly what each of its
// sequences would see in its own padded row: with causal attention the hidden state of a
// position depends on the tokens up to it and nothing else. Gradients of the shared rows
// arrive summed over every sequence below them (the key/value gather's adjoint adds them).
// Results come back in the [B, T] layout of tokenLogprobs (logprobs.ts), with the same scored
// columns, masks and entropy, so the loss code does not change.
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
import { segmentAttention } from './batch-attention.ts';
import { gatherRows, scatterRows } from './fused.ts';
import { linear, rmsNorm, ropeAt } from './layers.ts';
import { headLogprobs, type Scored, type LogprobOptions, type LogprobResult, type ScoreBatch } from './logprobs.ts';
import type { LoraAdapter } from './lora/types.ts';
import { PROJ_NAMES } from './lora/types.ts';
import type { Qwen3Model } from './model.ts';
import { buildPrefixTree, type PrefixTree } from './prefix-tree.ts';
import { recomputed } from './recompute.ts';
import { rowLayer } from './row-layer.ts';
import { layerLora, withTensors } from './stack.ts';
import { maskBias, maskIndex, selectBias } from './token-masks.ts';
import { idsToRows } from './vocab-map.ts';

/** Attention of every node: q [R, H, hd], k, v [R, KV, hd] -> [R, H, hd] (rows in node order). */
function treeAttention(tree: PrefixTree, q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, dims: { H: number; KV: number; hd: number }): tf.Tensor {
  const { H, KV, hd } = dims;
  const parts = tree.nodes.map((node) => {
    const n = node.ids.length;
    const own = (t: tf.Tensor, heads: number) => tf.slice(t, [node.row, 0, 0], [n, heads, hd]); // [n, heads, hd]
    // keys/values of positions 0 .. start + n - 1: the ancestors' rows, then the node's own
    const keys = (t: tf.Tensor) => (node.ancestorRows.length ? tf.concat([gatherRows(t, node.ancestorRows), own(t, KV)], 0) : own(t, KV)); // [start + n, KV, hd]
    const headMajor = (t: tf.Tensor) => tf.transpose(t, [1, 0, 2]);
    const ctx = segmentAttention(headMajor(own(q, H)), headMajor(keys(k)), headMajor(keys(v)), node.start, dims); // [H, n, hd]
    return tf.transpose(ctx, [1, 0, 2]); // [n, H, hd]
  });
  return parts.length > 1 ? tf.concat(parts, 0) : (parts[0] as tf.Tensor);
}

/** The scored columns: hidden row (tree layout), output element b*T + t, mask-bias position b*(T-1) + t-1. */
function treeColumns(tree: PrefixTree, batch: ScoreBatch, T: number): Scored {
  const h: number[] = [];
  const out: number[] = [];
  const bias: number[] = [];
  batch.inputIds.forEach((seq, b) => {
    const row = batch.scored?.[b];
    for (let t = 1; t < seq.length; t++) {
      if (row && !row[t]) continue;
      h.push(tree.rowOf[b]![t - 1]!);
      out.push(b * T + t);
      bias.push(b * (T - 1) + t - 1);
    }
  });
  return { h: Int32Array.from(h), out: Int32Array.from(out), bias: Int32Array.from(bias) };
}

/**
 * tokenLogprobs over the prefix tree of the batch. `tree` defaults to the batch's own; a test
 * may pass another (a deliberately misaligned one must change the results).
 */
export function treeLogprobs(
  model: Qwen3Model,
  adapter: LoraAdapter | null,
  batch: ScoreBatch,
  opts: LogprobOptions = {},
  tree: PrefixTree = buildPrefixTree(batch.inputIds),
): LogprobResult {
  const cfg = model.config;
  const B = batch.inputIds.length;
  const T = Math.max(0, ...batch.inputIds.map((s) => s.length));
  if (B === 0 || T === 0) throw new InputError('tokenLogprobs: the batch is empty (no sequences or only empty ones)');
  if (T > cfg.maxPositionEmbeddings) throw new InputError(`tokenLogprobs: sequence length ${T} exceeds max_position_embeddings ${cfg.maxPositionEmbeddings}`);
  let cols = treeColumns(tree, batch, T);
  const mi = T > 1 ? maskIndex(batch.masks, batch.inputIds, T) : null;
  // constrained positions: the [N, rows] mask bias at the scored columns
  const bias = mi ? selectBias(maskBias(mi, model.rows, model.vocab, opts.maskPath === 'auto' ? undefined : opts.maskPath), cols.bias) : null;
  const ids = tree.nodes.flatMap((n) => n.ids);
  const positions = tree.nodes.flatMap((n) => n.ids.map((_, i) => n.start + i));
  const targets = Int32Array.from(cols.out, (o) => batch.inputIds[Math.floor(o / T)]![o % T]!);
  return tf.tidy(() => {
    const N = cols.h.length;
    if (N === 0) {
      const zeros = tf.zeros([B, T]) as tf.Tensor2D;
      return opts.withEntropy ? { logprobs: zeros, entropy: tf.zeros([B, T]) as tf.Tensor2D } : { logprobs: zeros };
    }
    const { cos, sin } = ropeAt(positions, cfg.headDim, cfg.ropeTheta); // [R, 1, hd]
    const dims = { H: cfg.numAttentionHeads, KV: cfg.numKeyValueHeads, hd: cfg.headDim };
    let x = tf.gather(model.weights.embed, tf.tensor1d(idsToRows(model.vocab, ids, cfg.vocabSize), 'int32')) as tf.Tensor2D; // [R, D]
    model.weights.layers.forEach((w, l) => {
      const lora = layerLora(adapter, l, opts);
      const layer = (xi: tf.Tensor2D, c: tf.Tensor, s: tf.Tensor, ll: typeof lora) =>
        rowLayer(
          cfg,
          w,
          xi,
          c,
          s,
          (xx, Wt, m) => linear(xx, Wt, m, ll),
          (q, k, v) => treeAttention(tree, q, k, v, dims),
        ) as tf.Tensor2D;
      if (opts.recompute) {
        const params = lora ? PROJ_NAMES.flatMap((m) => (lora.pairs[m] ? [lora.pairs[m].A, lora.pairs[m].B] : [])) : [];
        x = recomputed((xi, [c, s], ps) => layer(xi, c!, s!, lora && withTensors(lora, ps)), x, [cos, sin], params);
      } else x = layer(x, cos, sin, lora);
    });
    const h = rmsNorm(x, model.weights.norm, cfg.rmsNormEps) as tf.Tensor2D; // [R, D]
    const hp = gatherRows(h, cols.h) as tf.Tensor2D; // [N, D]; a shared row may be read by several sequences
    const rowsOut = tf.tensor1d(idsToRows(model.vocab, Array.from(targets), cfg.vocabSize), 'int32');
    const head = headLogprobs(model, hp, rowsOut, bias, opts.withEntropy ?? false);
    const place = (v: tf.Tensor) => tf.reshape(scatterRows(v, cols.out, B * T), [B, T]) as tf.Tensor2D;
    return head.entropy ? { logprobs: place(head.logprobs), entropy: place(head.entropy) } : { logprobs: place(head.logprobs) };
  });
}
