// The memory plan of a run config (trainer/plan.ts over the config's model and knobs) and the
// check `gsteer train` and `gsteer sft train` make before anything starts: every stage the run
// trains (SFT when sft.enabled, then GRPO or PPO) must fit its device, 90% of it usable (the
// verdict of `gsteer model plan`). The stages' shapes:
//   sequence T   sft.maxSeqLen: an SFT example, and a rollout turn's prompt ++ completion, which
//                is the same shape (method §7.7); paper.yaml sets it from measured lengths
//   micro-batch  sft.microBatchSize (SFT), grpo.microBatchSize (GRPO, PPO)
//   recompute    grpo.gradientCheckpointing (both stages)
//   LoRA         lora.r, lora.targetModules; dropout when lora.dropout > 0
//   masks        constrained turns (rollout.constrained, GRPO/PPO): the B*T bound
// The device: trainer.device (a GPU of trainer/plan.ts GPUS) for backend gpu, the 4 GiB wasm
// heap for wasm, this machine's RAM for cpu / node; `auto` is what it will pick (gpu > node >
// wasm, by what is installed). A gpu run without trainer.device is not checked (said so).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { RunConfig } from '../configs/schema.ts';
import { readQwen3Config, type Qwen3Config } from '../model/config.ts';
import { publishedShape } from '../model/qwen3-shapes.ts';
import { readVocabMap } from '../model/vocab-map.ts';
import { InputError } from '../util/errors.ts';
import { fmtBytes, GPUS, planMemory, type PlanLine, type PlanOptions } from './plan.ts';

export const WASM_HEAP_BYTES = 4 * 2 ** 30; // wasm32: 65536 pages of 64 KiB (tfjs-backend-wasm's maximum)

export interface StagePlan {
  stage: 'sft' | 'grpo' | 'ppo';
  options: PlanOptions;
  lines: PlanLine[];
  total: number;
}

export interface Device {
  name: string;
  capacityBytes: number;
  usableBytes: number; // 90%
}

/** The model's shape: its config.json, else the published shape its folder is named after, else null. */
export function modelShape(dir: string): { config: Qwen3Config; source: string } | null {
  if (existsSync(join(dir, 'config.json'))) return { config: readQwen3Config(dir), source: join(dir, 'config.json') };
  const p = publishedShape(dir);
  return p ? { config: p.config, source: `no config.json yet: the published shape of Qwen/${p.name}` } : null;
}

/** `only`: plan that stage alone (`gsteer sft train`: 'sft'); default every stage the run trains. */
export function stagePlans(cfg: RunConfig, model: Qwen3Config, only?: StagePlan['stage']): StagePlan[] {
  const vocab = existsSync(cfg.policy.model) ? readVocabMap(cfg.policy.model, model.vocabSize) : null;
  const T = cfg.sft.maxSeqLen;
  const base = {
    seqLen: T,
    loraR: cfg.lora.r,
    targetModules: cfg.lora.targetModules,
    recompute: cfg.grpo.gradientCheckpointing,
    dropout: cfg.lora.dropout > 0,
    vocabRows: vocab ? vocab.keptIds.length : model.vocabSize,
  };
  const stage = (name: StagePlan['stage'], microBatch: number, constrained: boolean): StagePlan => {
    const options: PlanOptions = { ...base, microBatch, ...(constrained ? { distinctMasks: microBatch * T } : {}) };
    const lines = planMemory(model, options);
    return { stage: name, options, lines, total: (lines[lines.length - 1] as PlanLine).bytes };
  };
  const rl = cfg.algorithm === 'ppo' ? 'ppo' : 'grpo';
  if (only === 'sft') return [stage('sft', cfg.sft.microBatchSize, false)];
  return [...(cfg.sft.enabled ? [stage('sft', cfg.sft.microBatchSize, false)] : []), stage(rl, cfg.grpo.microBatchSize, cfg.rollout.constrained)];
}

/** What `auto` will pick, by what is installed (no native library is loaded). */
function resolvedBackend(kind: RunConfig['trainer']['backend']): 'gpu' | 'node' | 'wasm' | 'cpu' {
  if (kind !== 'auto') return kind;
  const require = createRequire(import.meta.url);
  const has = (pkg: string) => {
    try {
      require.resolve(pkg);
      return true;
    } catch {
      return false;
    }
  };
  return has('@tensorflow/tfjs-node-gpu') ? 'gpu' : has('@tensorflow/tfjs-node') ? 'node' : 'wasm';
}

/** The device the config trains on, or null (a gpu backend with no trainer.device: nothing to check against). */
export function deviceOf(cfg: RunConfig): Device | null {
  const backend = resolvedBackend(cfg.trainer.backend);
  const sized = (name: string, bytes: number): Device => ({ name, capacityBytes: bytes, usableBytes: 0.9 * bytes });
  switch (backend) {
    case 'gpu': {
      const d = cfg.trainer.device;
      if (d === undefined) return null;
      const gpu = GPUS.find((g) => g.name === d);
      if (!gpu)
        throw new InputError(`trainer.device = "${d}" is not a GPU gsteer plans for; use one of ${GPUS.map((g) => g.name).join(', ')}, or leave it unset`);
      return sized(gpu.name, gpu.gib * 2 ** 30);
    }
    case 'wasm':
      return sized('the wasm heap (backend wasm)', WASM_HEAP_BYTES);
    case 'node':
    case 'cpu':
      return sized(`this machine's RAM (backend ${backend})`, totalmem());
  }
}

function table(lines: PlanLine[]): string {
  const w = Math.max(...lines.map((l) => l.item.length));
  return lines.map((l) => `    ${l.item.padEnd(w)}  ${fmtBytes(l.bytes).padStart(11)}  ${l.note}`).join('\n');
}

export interface FitReport {
  /** null: not checked (no model shape, or no device to check against). */
  fits: boolean | null;
  /** One line: each stage's total against the device, and the verdict. */
  summary: string;
  text: string;
}

/** Every stage's plan (or `only` that one) against the device, as text; `fits` false when a stage does not fit. */
export function fitReport(cfg: RunConfig, only?: StagePlan['stage']): FitReport {
  const shape = modelShape(cfg.policy.model);
  if (!shape) {
    const line = `memory plan: ${cfg.policy.model} has no config.json and is no published Qwen3 size; not checked`;
    return { fits: null, summary: line, text: line };
  }
  const device = deviceOf(cfg);
  const c = shape.config;
  const out = [`memory plan of ${cfg.policy.model} (${shape.source}): Qwen3 ${c.numHiddenLayers} layers, D ${c.hiddenSize}, FFN ${c.intermediateSize}, fp32`];
  let fits: boolean | null = device ? true : null;
  const stages = stagePlans(cfg, c, only);
  for (const s of stages) {
    const ok = device ? s.total <= device.usableBytes : null;
    if (ok === false) fits = false;
    out.push(
      `  ${s.stage}: micro-batch ${s.options.microBatch} x ${s.options.seqLen} tokens, recompute ${s.options.recompute ? 'on' : 'off'}: ${fmtBytes(s.total)}${device ? ` ${ok ? 'fits' : 'does NOT fit'} ${device.name} (${fmtBytes(device.usableBytes)} usable of ${fmtBytes(device.capacityBytes)})` : ''}`,
    );
    out.push(table(s.lines));
  }
  if (!device) out.push('  no device to check against: backend gpu without trainer.device (set it, e.g. trainer.device=A100-80GB)');
  const totals = stages.map((s) => `${s.stage} ${fmtBytes(s.total)}`).join(', ');
  const summary = device
    ? `memory plan: ${totals} on ${device.name} (${fmtBytes(device.usableBytes)} usable): ${fits ? 'fits' : 'does NOT fit'}`
    : `memory plan: ${totals}; not checked (backend gpu without trainer.device)`;
  return { fits, summary, text: out.join('\n') };
}

/**
 * Refuse, before anything starts, a config whose training does not fit its device: an InputError
 * (exit 2) holding the plan and the fix. Returns the report when it fits or cannot be checked.
 */
export function checkFits(cfg: RunConfig, only?: StagePlan['stage']): FitReport {
  const r = fitReport(cfg, only);
  if (r.fits === false)
    throw new InputError(
      `${r.text}\nthe run does not fit its device; lower grpo.microBatchSize / sft.microBatchSize, set grpo.gradientCheckpointing=true, ` +
        'lower sft.maxSeqLen (it bounds every sequence the trainer computes), or train on a larger device (trainer.device / trainer.backend)',
    );
  return r;
}
