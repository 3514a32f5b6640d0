// SFT checkpoints and resume (method §10: same seed, same adapter bytes after a resume).
// Layout under <runDir>/<runName>/sft/:
//   checkpoints/step-000040/ adapter/ (PEFT: adapter_config.json + adapter_model.safetensors)
//                            optimizer.safetensors (AdamW m.{i}, v.{i}; metadata: step, names)
//                            sft_state.json (step, seed, examples sha256, batch layout, LoRA shape)
//   adapter/                 the final PEFT adapter (what `gsteer train --init-adapter` reads)
//   metrics.jsonl            one line per update and per held-out evaluation
// Batches are a pure function of (seed, epoch) and dropout of (seed, step), so the state a
// resume needs is the step, the adapter and the optimizer moments. A checkpoint dir is
// written under a temp name and renamed whole (util/atomic.ts).
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeDirAtomic, writeFileAtomic } from '../../util/atomic.ts';
import { fromFloat32, toFloat32 } from '../../model/io/dtype.ts';
import { readSafetensors, serializeSafetensors } from '../../model/io/safetensors.ts';
import type { AdamWState } from '../optim/adamw.ts';
import { InputError } from '../../util/errors.ts';

export const SftStateSchema = z
  .object({
    v: z.literal(1),
    step: z.number().int().min(0), // updates done
    totalSteps: z.number().int().min(0),
    seed: z.number().int(),
    examplesSha256: z.string(),
    batchSize: z.number().int().positive(),
    heldOutFraction: z.number(),
    baseModel: z.string(),
    lora: z.object({ r: z.number(), alpha: z.number(), targetModules: z.array(z.string()) }).strict(),
  })
  .strict();
export type SftState = z.output<typeof SftStateSchema>;

export function sftLayout(runRoot: string) {
  const root = join(runRoot, 'sft');
  return {
    root,
    adapter: join(root, 'adapter'),
    metrics: join(root, 'metrics.jsonl'),
    examples: join(root, 'examples.jsonl'),
    checkpoints: join(root, 'checkpoints'),
    checkpoint: (step: number) => join(root, 'checkpoints', `step-${String(step).padStart(6, '0')}`),
  };
}
export type SftLayout = ReturnType<typeof sftLayout>;

export function optimizerBytes(s: AdamWState): Uint8Array {
  const tensors = new Map<string, ReturnType<typeof fromFloat32>>();
  s.m.forEach((m, i) => tensors.set(`m.${i}`, fromFloat32(m, s.shapes[i] as number[])));
  s.v.forEach((v, i) => tensors.set(`v.${i}`, fromFloat32(v, s.shapes[i] as number[])));
  return serializeSafetensors(tensors, { format: 'gsteer-adamw/1', step: String(s.step), names: JSON.stringify(s.names) });
}

export function readOptimizer(file: string): AdamWState {
  const { tensors, metadata } = readSafetensors(file);
  const names = JSON.parse(metadata.names ?? '[]') as string[];
  const get = (k: string) => {
    const t = tensors.get(k);
    if (!t) throw new InputError(`${file}: tensor ${k} is missing; the optimizer state is incomplete, resume from an older checkpoint`);
    return t;
  };
  return {
    step: Number(metadata.step ?? 0),
    names,
    shapes: names.map((_, i) => get(`m.${i}`).shape),
    m: names.map((_, i) => toFloat32(get(`m.${i}`), file)),
    v: names.map((_, i) => toFloat32(get(`v.${i}`), file)),
  };
}

export interface SftCheckpointInput {
  state: SftState;
  optimizer: AdamWState;
  /** Writes the PEFT adapter into the given (empty) folder. */
  writeAdapter: (dir: string) => Promise<void> | void;
}

export async function writeSftCheckpoint(layout: SftLayout, input: SftCheckpointInput, keep: number): Promise<string> {
  const dir = layout.checkpoint(input.state.step);
  await writeDirAtomic(dir, async (tmp) => {
    await input.writeAdapter(join(tmp, 'adapter'));
    writeFileAtomic(join(tmp, 'optimizer.safetensors'), optimizerBytes(input.optimizer));
    // Written last: a checkpoint without sft_state.json is never picked up.
    writeFileAtomic(join(tmp, 'sft_state.json'), `${JSON.stringify(input.state, null, 2)}\n`);
  });
  const steps = listSftCheckpoints(layout);
  for (const s of steps.slice(0, Math.max(0, steps.length - keep))) rmSync(layout.checkpoint(s), { recursive: true, force: true });
  return dir;
}

export function listSftCheckpoints(layout: SftLayout): number[] {
  if (!existsSync(layout.checkpoints)) return [];
  return readdirSync(layout.checkpoints)
    .map((n) => /^step-(\d{6})$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .filter((s) => existsSync(join(layout.checkpoint(s), 'sft_state.json')))
    .sort((a, b) => a - b);
}

/** The newest checkpoint, checked against what this run would do; InputError says what differs. */
export function readSftCheckpoint(layout: SftLayout, expect: Omit<SftState, 'step' | 'v'>): { dir: string; state: SftState } | null {
  const steps = listSftCheckpoints(layout);
  const step = steps.at(-1);
  if (step === undefined) return null;
  const dir = layout.checkpoint(step);
  const parsed = SftStateSchema.safeParse(JSON.parse(readFileSync(join(dir, 'sft_state.json'), 'utf8')));
  if (!parsed.success)
    throw new InputError(`${dir}/sft_state.json is malformed (${parsed.error.issues[0]?.message}); delete that checkpoint or start with --fresh`);
  const s = parsed.data;
  const diffs = (Object.keys(expect) as (keyof typeof expect)[])
    .filter((k) => JSON.stringify(s[k]) !== JSON.stringify(expect[k]))
    .map((k) => `${k}: checkpoint ${JSON.stringify(s[k])}, this run ${JSON.stringify(expect[k])}`);
  if (diffs.length)
    throw new InputError(`cannot resume from ${dir}: ${diffs.join('; ')}; resume with the same config and examples, or start over with --fresh`);
  return { dir, state: s };
}
