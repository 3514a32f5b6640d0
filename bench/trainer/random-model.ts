// A Qwen3-shaped model with cheap deterministic random weights, for trainer benches (values
// do not change the speed): bench/trainer/lora.ts and mask-replay.ts.
import * as tf from '@tensorflow/tfjs';
import type { Qwen3Config } from '../../model/config.ts';
import { makeModel, type Qwen3Model } from '../../model/model.ts';
import { projShape } from '../../model/weights.ts';
import { PROJ_NAMES, type ProjName } from '../../model/lora/types.ts';

/** Cheap deterministic fill in [-0.03, 0.03) (xorshift32). */
function fill(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 4294967296 - 0.5) * 0.06;
  }
  return out;
}

export function randomModel(cfg: Qwen3Config): Qwen3Model {
  let seed = 1;
  const mat = (s: [number, number]) => tf.tensor2d(fill(s[0] * s[1], seed++), s);
  const ones = (n: number) => tf.ones([n]) as tf.Tensor1D;
  const layers = Array.from({ length: cfg.numHiddenLayers }, () => ({
    inputNorm: ones(cfg.hiddenSize),
    postNorm: ones(cfg.hiddenSize),
    qNorm: ones(cfg.headDim),
    kNorm: ones(cfg.headDim),
    proj: Object.fromEntries(PROJ_NAMES.map((m) => [m, mat(projShape(cfg, m))])) as Record<ProjName, tf.Tensor2D>,
  }));
  const embed = mat([cfg.vocabSize, cfg.hiddenSize]);
  return makeModel('(bench)', cfg, { embed, layers, norm: ones(cfg.hiddenSize), lmHead: embed }, null);
}
