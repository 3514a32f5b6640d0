// Random-initialized Qwen3-shaped checkpoints for CPU runs and tests (`gsteer model init`).
// Init as transformers does for Qwen3: linear and embedding weights ~ N(0, 0.02^2)
// (initializer_range), RMSNorm weights = 1; drawn from the seeded Rng, so the same seed
// writes the same bytes.
import { mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic.ts';
import { join } from 'node:path';
import { Rng } from '../util/rng.ts';
import { fromFloat32, type SafeTensor } from './io/dtype.ts';
import { writeSafetensors } from './io/safetensors.ts';
import { PROJ_NAMES } from './lora/types.ts';
import { toHfConfig, type Qwen3Config } from './config.ts';
import { buildVocabMap, VOCAB_MAP_FILE, vocabMapJson } from './vocab-map.ts';
import { projShape, projWeightName } from './weights.ts';

const QWEN3_VOCAB = 151936; // Qwen3 config.json vocab_size (151,669 real ids + padding rows)
const INITIALIZER_RANGE = 0.02;

/**
 * Presets: `tiny` trains on a laptop CPU; `small` is a step up for longer demos;
 * `qwen3-0.6b` has Qwen3-0.6B's config.json shapes (28 layers; `model init --layers N` cuts
 * them, e.g. for serving and trainer benchmarks with random weights).
 */
export const PRESETS: Record<string, Qwen3Config> = {
  tiny: {
    vocabSize: QWEN3_VOCAB,
    hiddenSize: 64,
    intermediateSize: 192,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    headDim: 16,
    rmsNormEps: 1e-6,
    ropeTheta: 1_000_000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 40960,
  },
  small: {
    vocabSize: QWEN3_VOCAB,
    hiddenSize: 256,
    intermediateSize: 768,
    numHiddenLayers: 4,
    numAttentionHeads: 8,
    numKeyValueHeads: 4,
    headDim: 32,
    rmsNormEps: 1e-6,
    ropeTheta: 1_000_000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 40960,
  },
  'qwen3-0.6b': {
    vocabSize: QWEN3_VOCAB,
    hiddenSize: 1024,
    intermediateSize: 3072,
    numHiddenLayers: 28,
    numAttentionHeads: 16,
    numKeyValueHeads: 8,
    headDim: 128,
    rmsNormEps: 1e-6,
    ropeTheta: 1_000_000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 40960,
  },
};

/** Qwen3's special tokens (<|endoftext|> .. </think>) and the 256 byte-level base tokens (ids 0-255). */
export function baseKeptIds(): number[] {
  const ids: number[] = [];
  for (let i = 0; i < 256; i++) ids.push(i);
  for (let i = 151643; i <= 151668; i++) ids.push(i);
  return ids;
}

export interface InitOptions {
  seed: number;
  /** Token ids to keep (sorted/deduplicated here); null = the full vocabulary. */
  keptIds: number[] | null;
  /**
   * Std of the input embedding (default initializer_range 0.02). Pretraining keeps the input
   * embedding frozen, so its scale against the blocks' outputs stays what init drew; a larger
   * one keeps each token's identity readable in the residual stream (models/tiny-qref/README.md).
   */
  embedStd?: number;
}

/** Write config.json, generation_config.json, model.safetensors (+ vocab_map.json). */
export function initModel(dir: string, cfg: Qwen3Config, opts: InitOptions): { params: number; rows: number } {
  const rng = Rng.derive(opts.seed, 'model-init');
  const kept = opts.keptIds ? [...new Set(opts.keptIds)].sort((a, b) => a - b) : null;
  const vocab = kept ? buildVocabMap(kept, cfg.vocabSize, undefined, 'model init') : null;
  const rows = vocab ? vocab.keptIds.length : cfg.vocabSize;
  const tensors = new Map<string, SafeTensor>();
  let params = 0;
  const normal = (shape: [number, number], std = INITIALIZER_RANGE): SafeTensor => {
    const v = new Float32Array(shape[0] * shape[1]);
    for (let i = 0; i < v.length; i++) v[i] = rng.normal() * std;
    params += v.length;
    return fromFloat32(v, shape);
  };
  const ones = (n: number): SafeTensor => ((params += n), fromFloat32(new Float32Array(n).fill(1), [n]));
  tensors.set('model.embed_tokens.weight', normal([rows, cfg.hiddenSize], opts.embedStd));
  for (let i = 0; i < cfg.numHiddenLayers; i++) {
    tensors.set(`model.layers.${i}.input_layernorm.weight`, ones(cfg.hiddenSize));
    for (const m of PROJ_NAMES) tensors.set(projWeightName(i, m), normal(projShape(cfg, m)));
    tensors.set(`model.layers.${i}.self_attn.q_norm.weight`, ones(cfg.headDim));
    tensors.set(`model.layers.${i}.self_attn.k_norm.weight`, ones(cfg.headDim));
    tensors.set(`model.layers.${i}.post_attention_layernorm.weight`, ones(cfg.hiddenSize));
  }
  tensors.set('model.norm.weight', ones(cfg.hiddenSize));
  if (!cfg.tieWordEmbeddings) tensors.set('lm_head.weight', normal([rows, cfg.hiddenSize]));

  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, 'config.json'), `${JSON.stringify(toHfConfig(cfg, { initializer_range: INITIALIZER_RANGE }), null, 2)}\n`);
  writeFileAtomic(
    join(dir, 'generation_config.json'),
    `${JSON.stringify({ bos_token_id: 151643, eos_token_id: [151645, 151643], pad_token_id: 151643, do_sample: true, temperature: 0.7, top_p: 0.95 }, null, 2)}\n`,
  );
  if (vocab) writeFileAtomic(join(dir, VOCAB_MAP_FILE), vocabMapJson(vocab));
  writeSafetensors(join(dir, 'model.safetensors'), tensors, { format: 'pt' });
  return { params, rows };
}
