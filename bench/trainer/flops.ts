// Matmul FLOPs of one LoRA fwd+bwd of the trainer (model/decoder-layer.ts,
// logprobs.ts), for achieved GFLOP/s in bench/trainer/lora.ts. A matmul [m, k] x [k, n] is
// 2mnk. Backward: frozen weights get no weight gradient (tfjs prunes them from the tape),
// so a frozen matmul costs 1x its forward (the input gradient); LoRA and attention
// matmuls (both operands need a gradient) cost 2x. Elementwise ops, norms and softmax are
// not counted. Approximate: layer 0's q/k/v input gradients are counted though unneeded.
import type { Qwen3Config } from '../../model/config.ts';
import { projDims } from '../../trainer/plan.ts';
import { PROJ_NAMES } from '../../model/lora/types.ts';

export interface SeqWork {
  T: number; // tokens of the (padded) sequence
  head: number; // positions through lm_head (T - 1 before issue 17, the loss tokens after)
  backward: boolean; // false for a row scored without a tape (A = 0, betaKl = 0)
}

/** FLOPs of one sequence's forward (+ backward when asked), LoRA rank r on all 7 projections. */
export function seqFlops(c: Qwen3Config, r: number, w: SeqWork): number {
  const dims = projDims(c);
  const frozen = PROJ_NAMES.reduce((s, m) => s + 2 * w.T * dims[m][0] * dims[m][1], 0);
  const lora = PROJ_NAMES.reduce((s, m) => s + 2 * w.T * r * (dims[m][0] + dims[m][1]), 0);
  const attn = 2 * 2 * c.numAttentionHeads * w.T * w.T * c.headDim; // q k^T and p v, full [T, T]
  const head = 2 * w.head * c.hiddenSize * c.vocabSize;
  const fwd = c.numHiddenLayers * (frozen + lora + attn) + head;
  const bwd = c.numHiddenLayers * (frozen + 2 * lora + 2 * attn) + head;
  return fwd + (w.backward ? bwd : 0);
}
