// Frozen Qwen3 weights as tfjs tensors, read from HF names (method §9) and checked against
// the config. `Qwen3Weights` is the HF layout (linear weights [out, in]); the forward runs
// on `ComputeWeights`, where every linear weight is stored transposed [in, out]: on the
// wasm backend a plain matMul is 3-4x faster than one with transposeB (measured on the
// tiny model's lm_head, 510x64 @ 64x5026: ~170 ms vs ~600 ms).
import * as tf from '@tensorflow/tfjs';
import { InputError } from '../util/errors.ts';
import { toFloat32 } from './io/dtype.ts';
import type { CheckpointReader } from './io/checkpoint-files.ts';
import { PROJ_NAMES, PROJ_PARENT, type ProjName } from './lora/types.ts';
import type { Qwen3Config } from './config.ts';

export interface LayerWeights {
  inputNorm: tf.Tensor1D; // [D]
  postNorm: tf.Tensor1D; // [D]
  qNorm: tf.Tensor1D; // [hd]
  kNorm: tf.Tensor1D; // [hd]
  /** q [H*hd, D], k/v [KV*hd, D], o [D, H*hd], gate/up [F, D], down [D, F] */
  proj: Record<ProjName, tf.Tensor2D>;
}

export interface Qwen3Weights {
  embed: tf.Tensor2D; // [rows, D]
  layers: LayerWeights[];
  norm: tf.Tensor1D; // [D]
  lmHead: tf.Tensor2D; // [rows, D]; the same tensor as embed when tied
}

export interface ComputeLayer {
  inputNorm: tf.Tensor1D; // [D]
  postNorm: tf.Tensor1D; // [D]
  qNorm: tf.Tensor1D; // [hd]
  kNorm: tf.Tensor1D; // [hd]
  /** W^T: q [D, H*hd], k/v [D, KV*hd], o [H*hd, D], gate/up [D, F], down [F, D] */
  projT: Record<ProjName, tf.Tensor2D>;
}

export interface ComputeWeights {
  embed: tf.Tensor2D; // [rows, D], for the input gather
  layers: ComputeLayer[];
  norm: tf.Tensor1D; // [D]
  lmHeadT: tf.Tensor2D; // [D, rows]: lm_head^T (a transposed copy of embed when tied)
}

/** Take ownership of HF-layout weights and transpose the linear ones (the originals are freed). */
export function toComputeLayout(w: Qwen3Weights): ComputeWeights {
  const lmHeadT = tf.transpose(w.lmHead) as tf.Tensor2D;
  if (w.lmHead !== w.embed) w.lmHead.dispose();
  return {
    embed: w.embed,
    norm: w.norm,
    lmHeadT,
    layers: w.layers.map((l) => {
      const projT = {} as Record<ProjName, tf.Tensor2D>;
      for (const m of PROJ_NAMES) {
        projT[m] = tf.transpose(l.proj[m]) as tf.Tensor2D;
        l.proj[m].dispose();
      }
      return { inputNorm: l.inputNorm, postNorm: l.postNorm, qNorm: l.qNorm, kNorm: l.kNorm, projT };
    }),
  };
}

/** [out, in] of each projection. */
export function projShape(cfg: Qwen3Config, m: ProjName): [number, number] {
  const { hiddenSize: D, intermediateSize: F, numAttentionHeads: H, numKeyValueHeads: KV, headDim: hd } = cfg;
  switch (m) {
    case 'q_proj':
      return [H * hd, D];
    case 'k_proj':
    case 'v_proj':
      return [KV * hd, D];
    case 'o_proj':
      return [D, H * hd];
    case 'gate_proj':
    case 'up_proj':
      return [F, D];
    case 'down_proj':
      return [D, F];
  }
}

export const projWeightName = (layer: number, m: ProjName): string => `model.layers.${layer}.${PROJ_PARENT[m]}.${m}.weight`;

export function loadWeights(ckpt: CheckpointReader, cfg: Qwen3Config, rows: number): Qwen3Weights {
  const tensor = <R extends tf.Rank>(name: string, shape: number[]): tf.Tensor<R> => {
    const t = ckpt.read(name);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))
      throw new InputError(
        `${ckpt.dir}: tensor "${name}" has shape [${t.shape}] but config.json implies [${shape}]; the checkpoint and its config.json (or vocab_map.json) disagree`,
      );
    return tf.tensor(toFloat32(t, `${ckpt.dir}: ${name}`), shape as number[], 'float32') as unknown as tf.Tensor<R>;
  };
  const D = cfg.hiddenSize;
  const made: tf.Tensor[] = [];
  const track = <T extends tf.Tensor>(t: T): T => (made.push(t), t);
  try {
    const embed = track(tensor<tf.Rank.R2>('model.embed_tokens.weight', [rows, D]));
    const layers: LayerWeights[] = [];
    for (let i = 0; i < cfg.numHiddenLayers; i++) {
      const p = `model.layers.${i}`;
      const proj = {} as Record<ProjName, tf.Tensor2D>;
      for (const m of PROJ_NAMES) proj[m] = track(tensor<tf.Rank.R2>(projWeightName(i, m), projShape(cfg, m)));
      layers.push({
        inputNorm: track(tensor(`${p}.input_layernorm.weight`, [D])),
        postNorm: track(tensor(`${p}.post_attention_layernorm.weight`, [D])),
        qNorm: track(tensor(`${p}.self_attn.q_norm.weight`, [cfg.headDim])),
        kNorm: track(tensor(`${p}.self_attn.k_norm.weight`, [cfg.headDim])),
        proj,
      });
    }
    const norm = track(tensor<tf.Rank.R1>('model.norm.weight', [D]));
    // Tied checkpoints normally omit lm_head.weight; when tied we always use the embedding.
    let lmHead = embed;
    if (!cfg.tieWordEmbeddings) {
      if (!ckpt.has('lm_head.weight')) throw new InputError(`${ckpt.dir}: tie_word_embeddings is false but the checkpoint has no lm_head.weight`);
      lmHead = track(tensor<tf.Rank.R2>('lm_head.weight', [rows, D]));
    }
    return { embed, layers, norm, lmHead };
  } catch (e) {
    made.forEach((t) => t.dispose());
    throw e;
  }
}

export function disposeWeights(w: ComputeWeights): void {
  w.embed.dispose();
  w.lmHeadT.dispose();
  w.norm.dispose();
  for (const l of w.layers) {
    l.inputNorm.dispose();
    l.postNorm.dispose();
    l.qNorm.dispose();
    l.kNorm.dispose();
    for (const m of PROJ_NAMES) l.projT[m].dispose();
  }
}
