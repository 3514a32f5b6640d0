// Merge a LoRA into the base weights: W' = W + (alpha/r) B A  ([out, r] x [r, in]).
// The merged model must give the same forward as base + adapter (tested), which is what
// vLLM / PEFT's merge_and_unload rely on.
import * as tf from '@tensorflow/tfjs';
import { makeModel, type Qwen3Model } from '../model.ts';
import type { LayerWeights } from '../weights.ts';
import { PROJ_NAMES, type LoraAdapter, type ProjName } from './types.ts';

/** A new model (own tensors; dispose it separately) with the adapter folded in. */
export function mergeLora(model: Qwen3Model, adapter: LoraAdapter): Qwen3Model {
  const w = model.weights;
  const embed = tf.clone(w.embed);
  const tied = model.config.tieWordEmbeddings;
  const layers = w.layers.map((l, i): LayerWeights => {
    const proj = {} as Record<ProjName, tf.Tensor2D>;
    for (const m of PROJ_NAMES) {
      const p = adapter.pair(i, m);
      // projT is W^T [in, out]; back to the HF layout [out, in]
      proj[m] = tf.tidy(() => {
        const W = tf.transpose(l.projT[m]) as tf.Tensor2D;
        return p ? (tf.add(W, tf.mul(tf.matMul(p.B, p.A), adapter.scaling)) as tf.Tensor2D) : W;
      });
    }
    return { inputNorm: tf.clone(l.inputNorm), postNorm: tf.clone(l.postNorm), qNorm: tf.clone(l.qNorm), kNorm: tf.clone(l.kNorm), proj };
  });
  const lmHead = tied ? embed : (tf.transpose(w.lmHeadT) as tf.Tensor2D);
  return makeModel(model.dir, model.config, { embed, lmHead, norm: tf.clone(w.norm), layers }, model.vocab);
}
