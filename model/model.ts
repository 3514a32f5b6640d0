// A loaded Qwen3 checkpoint: config + frozen weights (+ optional trimmed vocabulary).
import * as tf from '@tensorflow/tfjs';
import { CheckpointReader } from './io/checkpoint-files.ts';
import { readQwen3Config, type Qwen3Config } from './config.ts';
import { readVocabMap, type VocabMap } from './vocab-map.ts';
import { disposeWeights, loadWeights, toComputeLayout, type ComputeWeights, type Qwen3Weights } from './weights.ts';

export interface Qwen3Model {
  readonly config: Qwen3Config;
  readonly dir: string;
  /** Frozen weights in the compute layout (linear weights transposed, see weights.ts). */
  readonly weights: ComputeWeights;
  /** null = full vocabulary (row = token id). */
  readonly vocab: VocabMap | null;
  /** Rows of embed_tokens / lm_head (= vocabSize without a vocab map). */
  readonly rows: number;
  dispose(): void;
}

/**
 * Build a model from HF-layout weights already in memory (tests, merged weights). The model
 * takes ownership: the tensors passed in are freed or kept by it.
 */
export function makeModel(dir: string, config: Qwen3Config, hfWeights: Qwen3Weights, vocab: VocabMap | null): Qwen3Model {
  const weights = toComputeLayout(hfWeights);
  let disposed = false;
  return {
    config,
    dir,
    weights,
    vocab,
    rows: vocab ? vocab.keptIds.length : config.vocabSize,
    dispose() {
      if (!disposed) disposeWeights(weights);
      disposed = true;
    },
  };
}

/** Read config.json, optional vocab_map.json and the safetensors weights (after selectBackend). */
export async function loadModel(dir: string): Promise<Qwen3Model> {
  await tf.ready();
  const config = readQwen3Config(dir);
  const vocab = readVocabMap(dir, config.vocabSize);
  const rows = vocab ? vocab.keptIds.length : config.vocabSize;
  const ckpt = new CheckpointReader(dir);
  try {
    return makeModel(dir, config, loadWeights(ckpt, config, rows), vocab);
  } finally {
    ckpt.close();
  }
}
