// The toy adapter on disk, in the PEFT folder shape: adapter_config.json (r, lora_alpha,
// target_modules, base model, as PEFT writes them) + adapter_model.safetensors holding the
// toy logits `toy.logits` [16] F32. Optimizer state goes next to it as optimizer.json.
// Plain writes: the trainer writes into the temp folder writeRunDir (util/atomic.ts) renames whole.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '../../configs/schema.ts';
import { fromFloat32, toFloat32 } from '../../model/io/dtype.ts';
import { readSafetensors, serializeSafetensors } from '../../model/io/safetensors.ts';
import { InputError } from '../../util/errors.ts';
import { TOY_VOCAB } from './toy-policy.ts';

export const TOY_TENSOR = 'toy.logits';

export function writeToyAdapter(dir: string, theta: Float32Array, cfg: RunConfig): void {
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: cfg.policy.model,
    r: cfg.lora.r,
    lora_alpha: cfg.lora.alpha,
    lora_dropout: cfg.lora.dropout,
    target_modules: [...cfg.lora.targetModules],
    bias: 'none',
  };
  writeFileSync(join(dir, 'adapter_config.json'), `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(join(dir, 'adapter_model.safetensors'), serializeSafetensors({ [TOY_TENSOR]: fromFloat32(theta, [TOY_VOCAB]) }));
}

export function readToyAdapter(dir: string): Float32Array {
  const file = join(dir, 'adapter_model.safetensors');
  const t = readSafetensors(file).tensors.get(TOY_TENSOR);
  if (!t || t.shape.length !== 1 || t.shape[0] !== TOY_VOCAB)
    throw new InputError(`${file}: tensor ${TOY_TENSOR} [${TOY_VOCAB}] is missing; not a synthetic toy adapter`);
  return toFloat32(t, `${file}:${TOY_TENSOR}`);
}

export interface AdamState {
  t: number;
  m: number[];
  v: number[];
}

export function writeOptimizer(dir: string, s: AdamState): void {
  writeFileSync(join(dir, 'optimizer.json'), `${JSON.stringify(s)}\n`);
}

export function readOptimizer(dir: string): AdamState {
  return JSON.parse(readFileSync(join(dir, 'optimizer.json'), 'utf8')) as AdamState;
}
