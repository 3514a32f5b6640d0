// The Qwen3 model + LoRA adapter as the train step's Policy (trainer/policy.ts), and
// gradient-free scoring for the old / reference logprobs an update needs (method §5).
import * as tf from '@tensorflow/tfjs';
import type { LoraAdapter } from '../model/lora/types.ts';
import type { Qwen3Model } from '../model/model.ts';
import type { TokenMasks } from '../model/token-masks.ts';
import { tokenLogprobs } from '../model/logprobs.ts';
import { treeLogprobs } from '../model/prefix-logprobs.ts';
import type { Policy } from './policy.ts';
import { microBatches } from './step-batch.ts';
import { prefixOrder } from '../model/prefix-tree.ts';

export function loraPolicy(model: Qwen3Model, adapter: LoraAdapter): Policy {
  return {
    variables: () => adapter.variables(),
    score: (inputIds, o, masks) => (o.prefixTree ? treeLogprobs : tokenLogprobs)(model, adapter, { inputIds, masks, scored: o.scored }, o),
  };
}

/**
 * Per-token logprobs [B][T_b] without gradients, in micro-batches (dropout off):
 * adapter = the current LoRA gives logp_old before an update's epochs; adapter = null gives
 * the reference (base model) logprobs for the k3 KL term.
 */
export function scoreRows(
  model: Qwen3Model,
  adapter: LoraAdapter | null,
  inputIds: number[][],
  microBatchSize: number,
  masks?: readonly (TokenMasks | null)[],
  prefixTree = false,
): number[][] {
  const out: number[][] = new Array<number[]>(inputIds.length);
  const order = prefixTree ? prefixOrder(inputIds) : null; // micro-batches of sequences sharing the longest prefixes
  for (const part of microBatches(inputIds.length, microBatchSize)) {
    const idx = order ? part.map((i) => order[i]!) : part;
    const ids = idx.map((b) => inputIds[b]!);
    const score = prefixTree ? treeLogprobs : tokenLogprobs;
    const lp = tf.tidy(() => score(model, adapter, { inputIds: ids, masks: masks && idx.map((b) => masks[b] ?? null) }).logprobs.arraySync());
    ids.forEach((seq, i) => (out[idx[i]!] = lp[i]!.slice(0, seq.length)));
  }
  return out;
}
