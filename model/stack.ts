// The decoder stack shared by the batched forward and the KV-cached step: embeddings ->
// layers -> final RMSNorm (method §9). LoRA tensors come from the adapter per layer.
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../util/rng.ts';
import { PROJ_NAMES, type LoraAdapter } from './lora/types.ts';
import { decoderLayer } from './decoder-layer.ts';
import { causalMask, rmsNorm, ropeTables, type LayerLora } from './layers.ts';
import type { Qwen3Model } from './model.ts';
import { recomputed } from './recompute.ts';

export interface StackOptions {
  training?: boolean;
  dropoutSeed?: number;
  recompute?: boolean;
}

/** The adapter's tensors for one layer, with dropout seeds derived from (seed, layer, module). */
export function layerLora(adapter: LoraAdapter | null, layer: number, opts: StackOptions): LayerLora | null {
  if (!adapter) return null;
  const lora: LayerLora = { pairs: {}, scaling: adapter.scaling, dropout: 0, seeds: {} };
  const training = opts.training === true && adapter.config.dropout > 0;
  if (training) lora.dropout = adapter.config.dropout;
  for (const m of PROJ_NAMES) {
    const p = adapter.pair(layer, m);
    if (!p) continue;
    lora.pairs[m] = { A: p.A as tf.Tensor2D, B: p.B as tf.Tensor2D };
    if (training) lora.seeds[m] = Rng.derive(opts.dropoutSeed ?? 0, 'lora-dropout', layer, m).nextU32();
  }
  return lora;
}

/** Rebuild a LayerLora around explicit tensors (same module order as layerLora's pairs). */
export function withTensors(base: LayerLora, ts: tf.Tensor[]): LayerLora {
  const out: LayerLora = { ...base, pairs: {} };
  let i = 0;
  for (const m of PROJ_NAMES) if (base.pairs[m]) out.pairs[m] = { A: ts[i++] as tf.Tensor2D, B: ts[i++] as tf.Tensor2D };
  return out;
}

/**
 * rows: [B, T] embedding rows (right-padded). Returns the final-normed hidden states
 * [B*T, D]. Padding needs no key mask: with right padding a real query at t only sees
 * keys <= t, which are all real; outputs at padded positions are left unspecified.
 */
export function runStack(model: Qwen3Model, adapter: LoraAdapter | null, rows: tf.Tensor2D, opts: StackOptions): tf.Tensor2D {
  const cfg = model.config;
  const [B, T] = rows.shape;
  const { cos, sin } = ropeTables(T, 0, cfg.headDim, cfg.ropeTheta);
  const mask = causalMask(T, T, 0);
  let x = tf.reshape(tf.gather(model.weights.embed, tf.reshape(rows, [B * T])), [B * T, cfg.hiddenSize]) as tf.Tensor2D;
  model.weights.layers.forEach((w, i) => {
    const lora = layerLora(adapter, i, opts);
    if (opts.recompute) {
      const params = lora ? PROJ_NAMES.flatMap((m) => (lora.pairs[m] ? [lora.pairs[m].A, lora.pairs[m].B] : [])) : [];
      x = recomputed(
        (xi, [c, s, mk], ps) =>
          decoderLayer(cfg, w, lora && withTensors(lora, ps), { x: xi, B, Tq: T, cos: c as tf.Tensor, sin: s as tf.Tensor, mask: mk as tf.Tensor })
            .y as tf.Tensor2D,
        x,
        [cos, sin, mask],
        params,
      );
    } else {
      x = decoderLayer(cfg, w, lora, { x, B, Tq: T, cos, sin, mask }).y as tf.Tensor2D;
    }
  });
  return rmsNorm(x, model.weights.norm, cfg.rmsNormEps) as tf.Tensor2D; // [B*T, D]
}
