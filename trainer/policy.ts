// What the train step needs from a model: the trainable variables and per-token logprobs
// of given token ids. `loraPolicy` (policy-lora.ts) adapts the Qwen3 model + LoRA adapter;
// tests can adapt any small differentiable scorer the same way.
import type * as tf from '@tensorflow/tfjs';
import type { TokenMasks } from '../model/token-masks.ts';

export interface ScoreOptions {
  training: boolean; // dropout on (LoRA dropout) when true
  dropoutSeed?: number;
  recompute: boolean; // per-layer activation recomputation (gradient checkpointing)
  withEntropy: boolean;
  /** [B][T_b] nonzero where the logprob is needed (loss tokens); others may come back 0. Absent = all. */
  scored?: readonly (readonly number[])[];
  /** Compute prefixes the sequences share once (model/prefix-logprobs.ts); ids may then be ragged. */
  prefixTree?: boolean;
}

export interface Policy {
  /** Trainable variables, in a fixed order (the optimizer state is aligned with it). */
  variables(): tf.Variable[];
  /**
   * [B, T] logprob of ids[b][t] given ids[b][<t] (column 0 = 0); optional [B, T] entropy.
   * masks[b] = the allowed sets sequence b was sampled under (constrained turns; model/token-masks.ts).
   */
  score(inputIds: number[][], opts: ScoreOptions, masks?: readonly (TokenMasks | null)[]): { logprobs: tf.Tensor2D; entropy?: tf.Tensor2D };
}
