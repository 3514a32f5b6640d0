// LoRA adapters with PEFT's initialization (method §5): lora_A ~ kaiming_uniform(a=sqrt(5)),
// i.e. U(-1/sqrt(in), 1/sqrt(in)), drawn from the seeded Rng so runs replay; lora_B = 0,
// so a fresh adapter leaves the model unchanged. Base weights are plain tensors (frozen);
// only lora_A / lora_B are tf.Variables.
import * as tf from '@tensorflow/tfjs';
import type { LoraConfig } from '../../configs/schema.ts';
import { InputError } from '../../util/errors.ts';
import { Rng } from '../../util/rng.ts';
import type { Qwen3Model } from '../model.ts';
import { projShape } from '../weights.ts';
import { PROJ_NAMES, type LoraAdapter, type LoraPair, type ProjName } from './types.ts';

let adapterCounter = 0; // tfjs variable names are global; keep each adapter's distinct

export function checkTargets(targetModules: readonly string[], where: string): ProjName[] {
  const bad = targetModules.filter((m) => !(PROJ_NAMES as readonly string[]).includes(m));
  if (bad.length) throw new InputError(`${where}: target_modules ${JSON.stringify(bad)} are not Qwen3 projections; use any of ${PROJ_NAMES.join(', ')}`);
  if (!targetModules.length) throw new InputError(`${where}: target_modules is empty`);
  return PROJ_NAMES.filter((m) => targetModules.includes(m));
}

/** A trainable variable; the initial tensor shares its data and is released at once. */
function variable(values: Float32Array, shape: [number, number], name: string): tf.Variable {
  const t = tf.tensor2d(values, shape);
  const v = tf.variable(t, true, name);
  t.dispose();
  return v;
}

/**
 * Build an adapter from per-(layer, module) initial values (A [r, in], B [out, r]).
 * `init` returns Float32Arrays; the adapter owns the variables it creates.
 */
export function buildAdapter(
  model: Qwen3Model,
  cfg: { r: number; alpha: number; dropout: number; targetModules: readonly string[] },
  init: (layer: number, m: ProjName, shapeA: [number, number], shapeB: [number, number]) => { A: Float32Array; B: Float32Array },
): LoraAdapter {
  const targets = checkTargets(cfg.targetModules, 'lora');
  const id = adapterCounter++;
  const pairs: Map<ProjName, LoraPair>[] = [];
  const vars: tf.Variable[] = [];
  for (let i = 0; i < model.config.numHiddenLayers; i++) {
    const layer = new Map<ProjName, LoraPair>();
    for (const m of targets) {
      const [out, inp] = projShape(model.config, m);
      const { A, B } = init(i, m, [cfg.r, inp], [out, cfg.r]);
      const pair = {
        A: variable(A, [cfg.r, inp], `lora${id}/layers.${i}.${m}.lora_A`),
        B: variable(B, [out, cfg.r], `lora${id}/layers.${i}.${m}.lora_B`),
      };
      layer.set(m, pair);
      vars.push(pair.A, pair.B);
    }
    pairs.push(layer);
  }
  let disposed = false;
  return {
    config: { r: cfg.r, alpha: cfg.alpha, dropout: cfg.dropout, targetModules: [...targets] },
    scaling: cfg.alpha / cfg.r,
    pair: (layer, m) => pairs[layer]?.get(m),
    variables: () => [...vars],
    dispose() {
      if (!disposed) vars.forEach((v) => v.dispose());
      disposed = true;
    },
  };
}

/** A fresh PEFT-initialized adapter (method §5: r 8, alpha 16, dropout 0.05 by default). */
export function createLora(model: Qwen3Model, cfg: LoraConfig, seed: number): LoraAdapter {
  const rng = Rng.derive(seed, 'lora-init');
  return buildAdapter(model, cfg, (_layer, _m, [r, inp], [out]) => {
    const bound = 1 / Math.sqrt(inp); // gain(a=sqrt(5)) * sqrt(3 / fan_in)
    const A = new Float32Array(r * inp);
    for (let k = 0; k < A.length; k++) A[k] = (2 * rng.next() - 1) * bound;
    return { A, B: new Float32Array(out * r) };
  });
}
