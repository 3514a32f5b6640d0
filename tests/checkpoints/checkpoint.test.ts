// Checkpoint write / verify / refuse / prune / restore, on real files in a temp dir.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../configs/load.ts';
import { listCheckpoints, loadCheckpoint, newestValidCheckpoint, verifyCheckpoint, writeCheckpoint, type TrainerState } from '../../checkpoints/checkpoint.ts';
import { runLayout, type RunLayout } from '../../checkpoints/layout.ts';
import { restoreRunDir } from '../../checkpoints/restore.ts';
import { writeDirAtomic, writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { serializeSafetensors } from '../../model/io/safetensors.ts';
import { fromFloat32 } from '../../model/io/dtype.ts';

const cfg = resolveConfig({ policy: { model: 'models/tiny' }, lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] } });

let root: string;
let layout: RunLayout;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'gsteer-ckpt-'));
  layout = runLayout(root);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A real (one-tensor) safetensors file whose value is the version. */
const weightsOf = (v: number) => Buffer.from(serializeSafetensors({ w: fromFloat32(Float32Array.of(v), [1]) }));

function fakeVersion(v: number, r = 4): string {
  const dir = layout.adapter(v);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'adapter_config.json'),
    JSON.stringify({ peft_type: 'LORA', r, lora_alpha: 8, target_modules: ['v_proj', 'q_proj'], base_model_name_or_path: 'models/tiny' }),
  );
  writeFileSync(join(dir, 'adapter_model.safetensors'), weightsOf(v));
  writeFileSync(join(dir, 'optimizer.json'), JSON.stringify({ t: v }));
  writeFileSync(join(dir, 'trainer.json'), JSON.stringify({ step: v }));
  return dir;
}

const state = (step: number, over: Partial<TrainerState> = {}): TrainerState => ({
  v: 1,
  step,
  policyVersion: step,
  epoch: 0,
  seed: 42,
  scheduleCursor: step,
  rng: [1, 2, 3, 4],
  metricsLines: step,
  baseModel: 'models/tiny',
  lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] },
  ...over,
});

async function write(step: number, keep = 3, lagged: number[] = []) {
  const dir = fakeVersion(step);
  const states = layout.stepStates(step);
  writeFileAtomic(states, `${JSON.stringify({ userId: 'u1', profile: `p${step}`, memories: [] })}\n`);
  return writeCheckpoint(
    layout,
    { step, state: state(step), adapterVersionDir: dir, userStatesFile: states, laggedAdapters: lagged.map((v) => ({ version: v, dir: fakeVersion(v) })) },
    keep,
  );
}

describe('checkpoint write and verify', () => {
  it('writes the documented layout with a manifest of every file, and loads it back', async () => {
    const dir = await write(10);
    expect(dir.endsWith('checkpoints/step-000010')).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['adapter', 'manifest.json', 'optimizer.json', 'trainer_state.json', 'update_result.json', 'user_states.jsonl']);
    expect(readdirSync(join(dir, 'adapter')).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    expect(Object.keys(manifest.files).sort()).toEqual([
      'adapter/adapter_config.json',
      'adapter/adapter_model.safetensors',
      'optimizer.json',
      'trainer_state.json',
      'update_result.json',
      'user_states.jsonl',
    ]);
    expect(verifyCheckpoint(dir)).toBeNull();
    expect(loadCheckpoint(dir, cfg).state.step).toBe(10);
    // No temp directories or files left behind.
    expect(readdirSync(layout.checkpoints)).toEqual(['step-000010']);
  });

  it('refuses a corrupted file, naming it and the sha mismatch', async () => {
    const dir = await write(3);
    writeFileSync(join(dir, 'adapter', 'adapter_model.safetensors'), 'flipped');
    expect(verifyCheckpoint(dir)).toMatch(/adapter_model\.safetensors is corrupted: sha256 .* but manifest\.json says/);
    expect(() => loadCheckpoint(dir, cfg)).toThrow(InputError);
  });

  it('refuses a missing file and a missing manifest', async () => {
    const dir = await write(3);
    rmSync(join(dir, 'optimizer.json'));
    expect(verifyCheckpoint(dir)).toMatch(/optimizer\.json is missing \(listed in manifest\.json\)/);
    rmSync(join(dir, 'manifest.json'));
    expect(verifyCheckpoint(dir)).toMatch(/manifest\.json is missing/);
  });

  it('refuses a checkpoint of another base model or LoRA shape, with the reason', async () => {
    const dir = await write(2);
    const other = resolveConfig({ policy: { model: 'models/other' }, lora: { r: 8, alpha: 8, targetModules: ['q_proj', 'v_proj'] } });
    expect(() => loadCheckpoint(dir, other)).toThrow(
      /base model: checkpoint has "models\/tiny", config policy.model is "models\/other".*LoRA rank: adapter r=4, config lora.r=8/,
    );
  });

  it('keeps the newest cfg.checkpoint.keep checkpoints', async () => {
    for (const s of [2, 4, 6, 8]) await write(s, 2);
    expect(listCheckpoints(layout)).toEqual([6, 8]);
  });

  it('resume picks the newest checkpoint that verifies and reports the refused one', async () => {
    await write(2);
    const bad = await write(4);
    writeFileSync(join(bad, 'trainer_state.json'), '{}');
    const warnings: string[] = [];
    const got = newestValidCheckpoint(layout, cfg, (m) => warnings.push(m));
    expect(got?.state.step).toBe(2);
    expect(warnings.join('\n')).toMatch(/step-000004\/trainer_state\.json is corrupted/);
  });

  it('a config mismatch stops the search (an older checkpoint would not match either)', async () => {
    await write(2);
    const other = resolveConfig({ policy: { model: 'models/tiny' }, lora: { r: 4, alpha: 8, targetModules: ['q_proj'] } });
    expect(() => newestValidCheckpoint(layout, other, () => {})).toThrow(/LoRA targets: adapter \[q_proj, v_proj\], config lora.targetModules \[q_proj\]/);
  });
});

describe('restore a run directory to a checkpoint', () => {
  it('puts adapter versions back (lagged ones too), cuts metrics and later group files', async () => {
    await write(4, 3, [2, 3]);
    const ckpt = loadCheckpoint(layout.checkpoint(4), cfg);
    // What a crashed run left after step 4:
    fakeVersion(5);
    writeFileAtomic(layout.metrics, Array.from({ length: 6 }, (_, i) => `{"step":${i + 1}}\n`).join(''));
    writeFileAtomic(join(root, 'groups', 's000004-g0.json'), '{}');
    writeFileAtomic(join(root, 'groups', 's000005-g0.json'), '{"applied":true}');
    const call = (groupId?: string) => JSON.stringify({ role: 'policy', status: 'ok', ...(groupId ? { groupId } : {}) });
    writeFileAtomic(
      layout.llmCalls,
      [call('s000004-g0'), call(), call('s000005-g0'), call('s000005-g1'), call('s000004-g1')].map((l) => `${l}\n`).join('') + '{"torn',
    );
    rmSync(layout.adapter(2), { recursive: true });
    rmSync(layout.adapter(4), { recursive: true });
    const states = restoreRunDir(layout, ckpt);
    expect(states).toEqual([{ userId: 'u1', profile: 'p4', memories: [] }]);
    expect(existsSync(layout.adapter(5))).toBe(false);
    expect(readFileSync(join(layout.adapter(4), 'adapter_model.safetensors')).equals(weightsOf(4))).toBe(true);
    expect(JSON.parse(readFileSync(join(layout.adapter(4), 'trainer.json'), 'utf8'))).toEqual({ step: 4 });
    expect(readFileSync(join(layout.adapter(2), 'adapter_model.safetensors')).equals(weightsOf(2))).toBe(true);
    expect(readFileSync(layout.metrics, 'utf8').trim().split('\n')).toHaveLength(4);
    expect(existsSync(join(root, 'groups', 's000004-g0.json'))).toBe(true);
    expect(existsSync(join(root, 'groups', 's000005-g0.json'))).toBe(false);
    // the call records of step 5's groups go (the re-run records its own); those of step <= 4 and untagged ones stay
    const groups = readFileSync(layout.llmCalls, 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { groupId?: string }).groupId ?? null);
    expect(groups).toEqual(['s000004-g0', null, 's000004-g1']);
  });
});

describe('atomic directory write', () => {
  it('leaves the old directory intact when filling the new one fails', async () => {
    const dir = join(root, 'd');
    await writeDirAtomic(dir, (tmp) => writeFileSync(join(tmp, 'a'), 'old'));
    await expect(
      writeDirAtomic(dir, (tmp) => {
        writeFileSync(join(tmp, 'a'), 'new');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(readFileSync(join(dir, 'a'), 'utf8')).toBe('old');
    expect(readdirSync(root)).toEqual(['d']);
  });
});
