// LoRA adapters in the PEFT layout (method §9), so vLLM and PEFT load what we write and we
// load what they write: adapter_config.json + adapter_model.safetensors with tensors
// `base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.lora_A.weight` [r, in] and
// `...lora_B.weight` [out, r]; scaling alpha / r. We write F32, so save -> load -> save is
// bit-exact; BF16/F16 adapters from elsewhere load converted to fp32.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.ts';
import { join } from 'node:path';
import { InputError } from '../../util/errors.ts';
import { fromFloat32, toFloat32, type SafeTensor } from '../io/dtype.ts';
import { firstNonFinite, nonFiniteTensor } from '../io/finite.ts';
import { readSafetensors, writeSafetensors } from '../io/safetensors.ts';
import type { Qwen3Model } from '../model.ts';
import { projShape } from '../weights.ts';
import { buildAdapter, checkTargets } from './lora.ts';
import { PROJ_NAMES, PROJ_PARENT, type LoraAdapter, type ProjName } from './types.ts';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

export const peftTensorName = (layer: number, m: ProjName, ab: 'A' | 'B'): string =>
  `base_model.model.model.layers.${layer}.${PROJ_PARENT[m]}.${m}.lora_${ab}.weight`;

/** The adapter_config.json PEFT writes for a plain LoRA on a causal LM. */
export function peftConfigJson(adapter: LoraAdapter, baseModelNameOrPath: string): Record<string, unknown> {
  const c = adapter.config;
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: baseModelNameOrPath,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: c.alpha,
    lora_dropout: c.dropout,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    r: c.r,
    rank_pattern: {},
    revision: null,
    target_modules: [...c.targetModules],
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: false,
  };
}

/** The adapter's tensors in PEFT names (layer, module, A before B). */
export function adapterTensors(adapter: LoraAdapter, numLayers: number): Map<string, SafeTensor> {
  const out = new Map<string, SafeTensor>();
  for (let i = 0; i < numLayers; i++)
    for (const m of PROJ_NAMES) {
      const p = adapter.pair(i, m);
      if (!p) continue;
      for (const [ab, w] of [
        ['A', p.A],
        ['B', p.B],
      ] as const) {
        const values = w.dataSync() as Float32Array;
        const bad = firstNonFinite(values);
        // never written: a diverged adapter must not reach a file the server or a checkpoint trusts
        if (bad >= 0)
          throw new Error(`adapter tensor ${peftTensorName(i, m, ab)} holds ${values[bad]} at index ${bad}; an adapter with non-finite weights is not written`);
        out.set(peftTensorName(i, m, ab), fromFloat32(values, [...w.shape]));
      }
    }
  return out;
}

/**
 * Write the adapter folder (each file atomically); returns the sha256 of the weights file.
 * `prefix` names the files `<prefix>adapter_config.json` / `<prefix>adapter_model.safetensors`,
 * for a second adapter beside the first in one folder (the PPO critic's `critic.`).
 */
export function savePeftAdapter(adapter: LoraAdapter, dir: string, baseModelNameOrPath: string, numLayers?: number, prefix = ''): string {
  mkdirSync(dir, { recursive: true });
  const layers = numLayers ?? countLayers(adapter);
  const bytes = writeSafetensors(join(dir, prefix + ADAPTER_WEIGHTS), adapterTensors(adapter, layers), { format: 'pt' });
  writeFileAtomic(join(dir, prefix + ADAPTER_CONFIG), `${JSON.stringify(peftConfigJson(adapter, baseModelNameOrPath), null, 2)}\n`);
  return sha256(bytes);
}

function countLayers(adapter: LoraAdapter): number {
  let n = 0;
  while (PROJ_NAMES.some((m) => adapter.pair(n, m))) n++;
  return n;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** sha256 (hex) of an adapter folder's adapter_model.safetensors: identifies the adapter's exact bytes. */
export function adapterFingerprint(dir: string): string {
  return sha256(readFileSync(join(dir, ADAPTER_WEIGHTS)));
}

interface PeftConfig {
  r: number;
  alpha: number;
  dropout: number;
  targets: ProjName[];
}

export function parsePeftConfig(raw: unknown, file: string): PeftConfig {
  const c = (raw ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  const must = (ok: boolean, msg: string) => ok || problems.push(`${file}: ${msg}`);
  must(c.peft_type === 'LORA', `peft_type ${JSON.stringify(c.peft_type)} is not supported; gsteer loads LoRA adapters ("LORA")`);
  must(Number.isInteger(c.r) && (c.r as number) > 0, `r ${JSON.stringify(c.r)} must be a positive integer`);
  must(typeof c.lora_alpha === 'number' && c.lora_alpha > 0, `lora_alpha ${JSON.stringify(c.lora_alpha)} must be a positive number`);
  must(Array.isArray(c.target_modules), `target_modules ${JSON.stringify(c.target_modules)} must be a list of module names (a regex string is not supported)`);
  for (const key of ['use_rslora', 'use_dora', 'fan_in_fan_out'] as const)
    must(c[key] !== true, `${key} = true is not supported; gsteer implements plain LoRA (scaling alpha/r, weights [out, in])`);
  must(c.bias === undefined || c.bias === 'none', `bias ${JSON.stringify(c.bias)} is not supported; only "none"`);
  for (const key of ['rank_pattern', 'alpha_pattern'] as const)
    must(!c[key] || Object.keys(c[key] as object).length === 0, `${key} ${JSON.stringify(c[key])} is not supported; use one r and lora_alpha for all modules`);
  for (const key of ['layers_to_transform', 'modules_to_save'] as const)
    must(
      c[key] === undefined || c[key] === null,
      `${key} ${JSON.stringify(c[key])} is not supported; the adapter must cover all layers and save no extra modules`,
    );
  if (problems.length) throw new InputError(problems.join('\n'), problems);
  return {
    r: c.r as number,
    alpha: c.lora_alpha as number,
    dropout: typeof c.lora_dropout === 'number' ? c.lora_dropout : 0,
    targets: checkTargets(c.target_modules as string[], `${file}: target_modules`),
  };
}

/** Load a PEFT adapter folder for `model` (its files named with `prefix`, as saved); shapes, rank and targets must match the model. */
export function loadPeftAdapter(dir: string, model: Qwen3Model, prefix = ''): LoraAdapter {
  const cfgFile = join(dir, prefix + ADAPTER_CONFIG);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(cfgFile, 'utf8'));
  } catch (e) {
    throw new InputError(
      `${cfgFile}: cannot read the adapter config (${(e as Error).message}); an adapter folder holds ${ADAPTER_CONFIG} and ${ADAPTER_WEIGHTS}`,
    );
  }
  const pc = parsePeftConfig(raw, cfgFile);
  const file = join(dir, prefix + ADAPTER_WEIGHTS);
  const { tensors } = readSafetensors(file);
  const problems: string[] = [];
  const expected = new Set<string>();
  for (let i = 0; i < model.config.numHiddenLayers; i++)
    for (const m of pc.targets) {
      const [out, inp] = projShape(model.config, m);
      for (const [ab, shape] of [
        ['A', [pc.r, inp]],
        ['B', [out, pc.r]],
      ] as const) {
        const name = peftTensorName(i, m, ab);
        expected.add(name);
        const t = tensors.get(name);
        if (!t) problems.push(`${file}: missing tensor "${name}" (target_modules includes ${m}; the model has ${model.config.numHiddenLayers} layers)`);
        else if (t.shape.length !== 2 || t.shape[0] !== shape[0] || t.shape[1] !== shape[1])
          problems.push(
            `${file}: tensor "${name}" has shape [${t.shape}] but r=${pc.r} and ${model.dir} need [${shape}]; the adapter was trained for another base model or rank`,
          );
      }
    }
  const extra = [...tensors.keys()].filter((n) => !expected.has(n));
  if (extra.length)
    problems.push(
      `${file}: ${extra.length} tensor(s) the config and model do not account for, e.g. "${extra[0]}" (a layer the model lacks, a module not in target_modules, or a non-PEFT name)`,
    );
  const bad = problems.length ? null : [...expected].map((name) => nonFiniteTensor(name, tensors.get(name) as SafeTensor, file)).find((x) => x !== null);
  if (bad) problems.push(`${file}: ${bad}; the adapter is damaged or comes from a diverged run: use an earlier version or checkpoint`);
  if (problems.length) throw new InputError(problems.join('\n'), problems);
  return buildAdapter(model, { r: pc.r, alpha: pc.alpha, dropout: pc.dropout, targetModules: pc.targets }, (i, m) => ({
    A: toFloat32(tensors.get(peftTensorName(i, m, 'A')) as SafeTensor, `${file}: ${peftTensorName(i, m, 'A')}`),
    B: toFloat32(tensors.get(peftTensorName(i, m, 'B')) as SafeTensor, `${file}: ${peftTensorName(i, m, 'B')}`),
  }));
}
