// The published shapes of the Qwen3 dense models (the config.json of each Hugging Face repo
// Qwen/Qwen3-0.6B ... Qwen/Qwen3-32B), so `gsteer model plan --config` and the start of
// `gsteer train` can plan a run whose model folder holds no config.json yet (the paper's
// Qwen3-8B before its weights are downloaded). A folder's own config.json always wins. Only
// the fields the memory plan reads; rope and norm values are Qwen3's for every size.
import { basename } from 'node:path';
import type { Qwen3Config } from './config.ts';

const common = { headDim: 128, numKeyValueHeads: 8, vocabSize: 151_936, rmsNormEps: 1e-6, ropeTheta: 1_000_000, maxPositionEmbeddings: 40_960 };

export const QWEN3_SHAPES: Readonly<Record<string, Qwen3Config>> = {
  'Qwen3-0.6B': { ...common, hiddenSize: 1024, intermediateSize: 3072, numHiddenLayers: 28, numAttentionHeads: 16, tieWordEmbeddings: true },
  'Qwen3-1.7B': { ...common, hiddenSize: 2048, intermediateSize: 6144, numHiddenLayers: 28, numAttentionHeads: 16, tieWordEmbeddings: true },
  'Qwen3-4B': { ...common, hiddenSize: 2560, intermediateSize: 9728, numHiddenLayers: 36, numAttentionHeads: 32, tieWordEmbeddings: true },
  'Qwen3-8B': { ...common, hiddenSize: 4096, intermediateSize: 12288, numHiddenLayers: 36, numAttentionHeads: 32, tieWordEmbeddings: false },
  'Qwen3-14B': { ...common, hiddenSize: 5120, intermediateSize: 17408, numHiddenLayers: 40, numAttentionHeads: 40, tieWordEmbeddings: false },
  'Qwen3-32B': { ...common, hiddenSize: 5120, intermediateSize: 25600, numHiddenLayers: 64, numAttentionHeads: 64, tieWordEmbeddings: false },
};

/** The published shape whose name is the folder's (or the Hub id's) last part, case-insensitive; null when none is. */
export function publishedShape(modelPath: string): { name: string; config: Qwen3Config } | null {
  const last = basename(modelPath.replace(/[\\/]+$/, '')).toLowerCase();
  const name = Object.keys(QWEN3_SHAPES).find((k) => k.toLowerCase() === last);
  return name ? { name, config: QWEN3_SHAPES[name] as Qwen3Config } : null;
}
