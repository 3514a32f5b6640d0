// Checkpoints (README.md in this folder): checkpoints/step-000010/{adapter/ (PEFT),
// optimizer.*, trainer_state.json, user_states.jsonl, manifest.json}. Written under a temp
// name and renamed whole, manifest last; verified (a readable manifest, sha256 of every file,
// finite tensors and optimizer state, run config match) before anything is loaded from one.
// A checkpoint holding a NaN is never written and never counts as a good one: pruning keeps
// the newest `keep` checkpoints that verify, so a bad newer one never pushes out a good one.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { z } from 'zod';
import type { RunConfig } from '../configs/schema.ts';
import { InputError } from '../util/errors.ts';
import { copyFileSynced, recoverReplacedIn, sha256File, writeDirAtomic, writeFileAtomic } from '../util/atomic.ts';
import { nonFiniteFile } from '../model/io/finite.ts';
import { adapterDirName, numberedName, type RunLayout } from './layout.ts';

export const TrainerStateSchema = z
  .object({
    v: z.literal(1),
    step: z.number().int().min(0), // updates done
    policyVersion: z.number().int().min(0), // adapter version in adapter/
    epoch: z.number().int().min(0), // resume count when written
    seed: z.number().int(),
    /** Schedule cursor: the next update is step + 1; the schedule is a pure function of (seed, pass). */
    scheduleCursor: z.number().int().min(0),
    rng: z.tuple([z.number(), z.number(), z.number(), z.number()]), // controller Rng state
    metricsLines: z.number().int().min(0), // metrics.jsonl lines that belong to steps <= step
    baseModel: z.string(),
    lora: z.object({ r: z.number(), alpha: z.number(), targetModules: z.array(z.string()) }),
  })
  .strict();
export type TrainerState = z.output<typeof TrainerStateSchema>;

const ManifestSchema = z.object({ v: z.literal(1), files: z.record(z.string(), z.string()) }).strict();

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

/** Files of a trainer-written adapter version dir that are trainer state, not the PEFT adapter (PPO's critic.*: method §13). */
const isOptimizerFile = (name: string) => name.startsWith('optimizer.') || name.startsWith('critic.');
const TRAINER_FILE = 'trainer.json';
/** The trainer's record of the update (trainer.json in the version dir). */
const UPDATE_RESULT = 'update_result.json';

function copyDir(src: string, dst: string): void {
  mkdirSync(dst, { recursive: true });
  for (const name of readdirSync(src)) if (statSync(join(src, name)).isFile()) copyFileSynced(join(src, name), join(dst, name));
}

/**
 * Put a checkpoint's adapter versions back under adapters/ as the trainer wrote them
 * (resume): policy-v{step} from adapter/ + optimizer.* + update_result.json, and any lagged ones.
 */
export function restoreAdapterVersions(ckptDir: string, step: number, adapterDir: (v: number) => string): void {
  const dst = adapterDir(step);
  rmSync(dst, { recursive: true, force: true });
  copyDir(join(ckptDir, 'adapter'), dst);
  for (const name of readdirSync(ckptDir)) {
    if (isOptimizerFile(name)) copyFileSynced(join(ckptDir, name), join(dst, name));
    if (name === UPDATE_RESULT) copyFileSynced(join(ckptDir, name), join(dst, TRAINER_FILE));
  }
  const lagged = join(ckptDir, 'lagged');
  if (!existsSync(lagged)) return;
  for (const name of readdirSync(lagged)) {
    const v = numberedName(name, 'policy-v');
    if (v === null) continue;
    rmSync(adapterDir(v), { recursive: true, force: true });
    copyDir(join(lagged, name), adapterDir(v));
  }
}

export interface CheckpointInput {
  step: number;
  state: TrainerState;
  adapterVersionDir: string; // adapters/policy-v... as the trainer wrote it
  userStatesFile: string | null; // steps/step-.../user_states.jsonl (null: no user states)
  laggedAdapters: { version: number; dir: string }[]; // versions the next updates sample from
}

export async function writeCheckpoint(layout: RunLayout, input: CheckpointInput, keep: number): Promise<string> {
  const dir = layout.checkpoint(input.step);
  const bad = [input.adapterVersionDir, ...input.laggedAdapters.map((l) => l.dir)].map(nonFiniteIn).find((x) => x !== null);
  if (bad) throw new Error(`checkpoint step ${input.step} not written: ${bad}`);
  await writeDirAtomic(dir, (tmp) => {
    mkdirSync(join(tmp, 'adapter'));
    for (const name of readdirSync(input.adapterVersionDir)) {
      const src = join(input.adapterVersionDir, name);
      if (!statSync(src).isFile()) continue;
      const dst = name === TRAINER_FILE ? UPDATE_RESULT : isOptimizerFile(name) ? name : join('adapter', name);
      copyFileSynced(src, join(tmp, dst));
    }
    // With maxPolicyLag > 0 the next updates sample from older versions: keep them too.
    for (const { version, dir: src } of input.laggedAdapters) copyDir(src, join(tmp, 'lagged', adapterDirName(version)));
    writeFileAtomic(join(tmp, 'trainer_state.json'), `${JSON.stringify(input.state, null, 2)}\n`);
    if (input.userStatesFile) copyFileSynced(input.userStatesFile, join(tmp, 'user_states.jsonl'));
    else writeFileAtomic(join(tmp, 'user_states.jsonl'), '');
    // Manifest last: it vouches for every other file.
    const files: Record<string, string> = {};
    for (const f of listFiles(tmp)) files[relative(tmp, f)] = sha256File(f);
    writeFileAtomic(join(tmp, 'manifest.json'), `${JSON.stringify({ v: 1, files }, null, 2)}\n`);
  });
  pruneCheckpoints(layout, keep);
  return dir;
}

export function listCheckpoints(layout: RunLayout): number[] {
  if (!existsSync(layout.checkpoints)) return [];
  recoverReplacedIn(layout.checkpoints); // a replacement a crash interrupted: the old copy back
  return readdirSync(layout.checkpoints)
    .map((n) => numberedName(n, 'step-'))
    .filter((n): n is number => n !== null)
    .sort((a, b) => a - b);
}

/**
 * Keep the newest `keep` checkpoints that verify and everything newer than the oldest of
 * them (a checkpoint that does not verify never counts toward `keep`, so it never pushes
 * out a good one); remove the rest.
 */
export function pruneCheckpoints(layout: RunLayout, keep: number): void {
  const steps = listCheckpoints(layout).reverse(); // newest first
  let good = 0;
  for (const [i, s] of steps.entries()) {
    if (verifyCheckpoint(layout.checkpoint(s)) === null) good++;
    if (good >= keep) {
      for (const older of steps.slice(i + 1)) rmSync(layout.checkpoint(older), { recursive: true, force: true });
      return;
    }
  }
}

/** The first non-finite tensor or optimizer value in a folder's *.safetensors and optimizer / critic JSON files, or null. */
export function nonFiniteIn(dir: string): string | null {
  for (const f of listFiles(dir)) {
    if (f.endsWith('.safetensors')) {
      const bad = nonFiniteFile(f);
      if (bad) return bad;
    } else if (/optimizer[^/]*\.json$/.test(f) && /[[,:]null[\],}]/.test(readFileSync(f, 'utf8'))) {
      return `${f}: holds null where a number belongs (a NaN written as JSON)`;
    }
  }
  return null;
}

/** Why a checkpoint cannot be used, or null when it verifies. */
export function verifyCheckpoint(dir: string): string | null {
  const mpath = join(dir, 'manifest.json');
  if (!existsSync(mpath)) return `${mpath} is missing (checkpoint incomplete)`;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(mpath, 'utf8'));
  } catch (e) {
    return `${mpath} is not valid JSON (${(e as Error).message}): damaged`;
  }
  const m = ManifestSchema.safeParse(raw);
  if (!m.success) return `${mpath} is malformed`;
  for (const [rel, sha] of Object.entries(m.data.files)) {
    const f = join(dir, rel);
    if (!existsSync(f)) return `${f} is missing (listed in manifest.json)`;
    const got = sha256File(f);
    if (got !== sha) return `${f} is corrupted: sha256 ${got.slice(0, 12)}... but manifest.json says ${sha.slice(0, 12)}...`;
  }
  for (const need of ['trainer_state.json', 'user_states.jsonl', 'adapter/adapter_config.json'])
    if (!(need in m.data.files)) return `${join(dir, need)} is missing from the checkpoint`;
  // sha256 vouches for the bytes, not for the numbers: a diverged adapter verifies too
  const bad = nonFiniteIn(dir);
  return bad ? `${bad} (non-finite: from a diverged update)` : null;
}

/** The checkpoint's base model and LoRA shape must be the run config's. */
export function checkCompatible(dir: string, state: TrainerState, cfg: RunConfig): string | null {
  const problems: string[] = [];
  if (state.baseModel !== cfg.policy.model) problems.push(`base model: checkpoint has "${state.baseModel}", config policy.model is "${cfg.policy.model}"`);
  problems.push(...loraMismatch(join(dir, 'adapter'), cfg));
  return problems.length ? `${dir} does not match the run config: ${problems.join('; ')}` : null;
}

/** Compare a PEFT adapter_config.json with cfg.lora (rank, alpha, target modules). */
export function loraMismatch(adapterDir: string, cfg: RunConfig): string[] {
  const file = join(adapterDir, 'adapter_config.json');
  if (!existsSync(file)) return [`${file} is missing (not a PEFT adapter folder)`];
  const ac = JSON.parse(readFileSync(file, 'utf8')) as { r?: number; lora_alpha?: number; target_modules?: string[] | string };
  const out: string[] = [];
  if (ac.r !== cfg.lora.r) out.push(`LoRA rank: adapter r=${ac.r}, config lora.r=${cfg.lora.r} (set --set lora.r=${ac.r})`);
  if (ac.lora_alpha !== cfg.lora.alpha) out.push(`LoRA alpha: adapter ${ac.lora_alpha}, config lora.alpha=${cfg.lora.alpha}`);
  const targets = Array.isArray(ac.target_modules) ? [...ac.target_modules].sort() : [];
  const want = [...cfg.lora.targetModules].sort();
  if (targets.join(',') !== want.join(',')) out.push(`LoRA targets: adapter [${targets.join(', ')}], config lora.targetModules [${want.join(', ')}]`);
  return out;
}

export interface LoadedCheckpoint {
  dir: string;
  state: TrainerState;
}

/** Read and check one checkpoint; InputError names the reason. */
export function loadCheckpoint(dir: string, cfg: RunConfig): LoadedCheckpoint {
  const bad = verifyCheckpoint(dir);
  if (bad) throw new InputError(`checkpoint refused: ${bad}`);
  const parsed = TrainerStateSchema.safeParse(JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')));
  if (!parsed.success) throw new InputError(`checkpoint refused: ${dir}/trainer_state.json is malformed (${parsed.error.issues[0]?.message})`);
  const mismatch = checkCompatible(dir, parsed.data, cfg);
  if (mismatch) throw new InputError(`checkpoint refused: ${mismatch}`);
  return { dir, state: parsed.data };
}

/** The newest checkpoint that verifies; refused ones are reported through `warn`. */
export function newestValidCheckpoint(layout: RunLayout, cfg: RunConfig, warn: (msg: string) => void): LoadedCheckpoint | null {
  for (const step of listCheckpoints(layout).reverse()) {
    try {
      return loadCheckpoint(layout.checkpoint(step), cfg);
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      // A config mismatch is the user's to fix; an older checkpoint would not match either.
      if (e.message.includes('does not match the run config')) throw e;
      warn(`${e.message}; trying an older checkpoint`);
    }
  }
  return null;
}
