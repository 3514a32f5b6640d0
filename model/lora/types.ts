// The LoRA adapter the forward pass reads (PEFT semantics, method §5/§9):
// y = x W^T + (alpha / r) * dropout(x) A^T B^T, A [r, in], B [out, r].
import type * as tf from '@tensorflow/tfjs';

/** PEFT target module names, in the order the decoder layer applies them. */
export const PROJ_NAMES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type ProjName = (typeof PROJ_NAMES)[number];

/** Where a projection sits in the HF module tree. */
export const PROJ_PARENT: Record<ProjName, 'self_attn' | 'mlp'> = {
  q_proj: 'self_attn',
  k_proj: 'self_attn',
  v_proj: 'self_attn',
  o_proj: 'self_attn',
  gate_proj: 'mlp',
  up_proj: 'mlp',
  down_proj: 'mlp',
};

export interface LoraPair {
  /** [r, in] */
  A: tf.Variable;
  /** [out, r] */
  B: tf.Variable;
}

export interface LoraAdapter {
  readonly config: { r: number; alpha: number; dropout: number; targetModules: string[] };
  /** alpha / r (PEFT without rslora). */
  readonly scaling: number;
  /** The pair for one projection of one layer, or undefined when that module is not targeted. */
  pair(layer: number, module: ProjName): LoraPair | undefined;
  /** Trainable variables in a fixed order: layer, then module in PROJ_NAMES order, A before B. */
  variables(): tf.Variable[];
  dispose(): void;
}
