// Damaged files (issue 32 items 5-6), on real files in a temp dir: a corrupt manifest.json
// makes resume fall back to the checkpoint before it; a checkpoint whose sha256 verifies
// but whose adapter holds a NaN is refused (and never counted as good when pruning, so a
// bad newer checkpoint never pushes out a good one); a directory replacement a crash
// interrupted is recovered from <dir>.replaced; a torn last line of metrics.jsonl is skipped
// with a note (and `gsteer monitor` prints the run); a config `extends:` cycle is an error
// naming the chain. Each was checked to fail without its fix.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig, resolveConfig } from '../../configs/load.ts';
import {
  listCheckpoints,
  newestValidCheckpoint,
  pruneCheckpoints,
  verifyCheckpoint,
  writeCheckpoint,
  type TrainerState,
} from '../../checkpoints/checkpoint.ts';
import { runLayout, type RunLayout } from '../../checkpoints/layout.ts';
import { serializeSafetensors } from '../../model/io/safetensors.ts';
import { fromFloat32 } from '../../model/io/dtype.ts';
import { readMetrics } from '../../monitor/sink.ts';
import { writeDirAtomic, writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { main } from '../../cli/main.ts';

const cfg = resolveConfig({ policy: { model: 'models/tiny' }, lora: { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] } });
let root: string;
let layout: RunLayout;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'gsteer-damage-'));
  layout = runLayout(root);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const weights = (v: number) => serializeSafetensors({ 'lora_A.weight': fromFloat32(Float32Array.of(v, 0.5), [1, 2]) });

function version(v: number, value = v): string {
  const dir = layout.adapter(v);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: ['q_proj', 'v_proj'] }));
  writeFileSync(join(dir, 'adapter_model.safetensors'), weights(value));
  writeFileSync(join(dir, 'optimizer.json'), JSON.stringify({ m: [[0]], v: [[0]] }));
  writeFileSync(join(dir, 'trainer.json'), JSON.stringify({ step: v }));
  return dir;
}
const state = (step: number): TrainerState => ({
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
});
const write = (step: number, keep = 5) =>
  writeCheckpoint(layout, { step, state: state(step), adapterVersionDir: version(step), userStatesFile: null, laggedAdapters: [] }, keep);

/** A checkpoint whose manifest vouches for an adapter holding a NaN (written around the write-time check). */
async function nanCheckpoint(step: number): Promise<void> {
  await write(step);
  const ok = version(step);
  writeFileSync(join(ok, 'adapter_model.safetensors'), weights(NaN));
  // rebuild the checkpoint from the NaN version with the check bypassed: copy, then a fresh manifest
  const dir = layout.checkpoint(step);
  writeFileSync(join(dir, 'adapter', 'adapter_model.safetensors'), weights(NaN));
  const { createHash } = await import('node:crypto');
  const { readFileSync } = await import('node:fs');
  const files: Record<string, string> = {};
  for (const f of [
    'adapter/adapter_config.json',
    'adapter/adapter_model.safetensors',
    'optimizer.json',
    'trainer_state.json',
    'update_result.json',
    'user_states.jsonl',
  ])
    files[f] = createHash('sha256')
      .update(readFileSync(join(dir, f)))
      .digest('hex');
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ v: 1, files }));
}

describe('checkpoints that do not verify', () => {
  it('a corrupt manifest.json: resume falls back to the checkpoint before it, naming the damage', async () => {
    await write(2);
    await write(4);
    writeFileSync(join(layout.checkpoint(4), 'manifest.json'), '{"v": 1, "files": {"adapter/adap'); // torn
    const warnings: string[] = [];
    const got = newestValidCheckpoint(layout, cfg, (m) => warnings.push(m));
    expect(got?.state.step).toBe(2);
    expect(warnings.join('\n')).toMatch(/step-000004\/manifest\.json is not valid JSON .*: damaged; trying an older checkpoint/);
  });

  it('a NaN in an adapter the manifest vouches for: refused, the good one before it used', async () => {
    await write(2);
    await nanCheckpoint(4);
    expect(verifyCheckpoint(layout.checkpoint(4))).toMatch(
      /adapter_model\.safetensors: tensor "lora_A\.weight" holds NaN at index 0 \(non-finite: from a diverged update\)/,
    );
    expect(newestValidCheckpoint(layout, cfg, () => {})?.state.step).toBe(2);
    // and a NaN adapter version is never checkpointed
    writeFileSync(join(version(6), 'adapter_model.safetensors'), weights(NaN));
    await expect(
      writeCheckpoint(layout, { step: 6, state: state(6), adapterVersionDir: layout.adapter(6), userStatesFile: null, laggedAdapters: [] }, 5),
    ).rejects.toThrow(/checkpoint step 6 not written: .*holds NaN/);
    expect(listCheckpoints(layout)).toEqual([2, 4]);
  });

  it('pruning keeps the newest `keep` checkpoints that verify: bad newer ones never push out a good one', async () => {
    await write(2);
    await write(4);
    await nanCheckpoint(6);
    await write(8);
    writeFileSync(join(layout.checkpoint(8), 'manifest.json'), 'not json');
    pruneCheckpoints(layout, 2);
    expect(listCheckpoints(layout)).toEqual([2, 4, 6, 8]); // 6 and 8 do not count: 4 and 2 are the two good ones
    await write(10);
    pruneCheckpoints(layout, 2);
    expect(listCheckpoints(layout)).toEqual([4, 6, 8, 10]);
    expect(newestValidCheckpoint(layout, cfg, () => {})?.state.step).toBe(10);
  });
});

describe('directory replacement', () => {
  it('a crash between the two renames leaves the old copy, which the next reader puts back', async () => {
    await write(2);
    // what writeDirAtomic leaves if the process dies after moving the old copy aside
    renameSync(layout.checkpoint(2), `${layout.checkpoint(2)}.replaced`);
    expect(listCheckpoints(layout)).toEqual([2]);
    expect(verifyCheckpoint(layout.checkpoint(2))).toBeNull();
    // a finished replacement leaves no .replaced copy and no temp folder
    const dir = join(root, 'd');
    await writeDirAtomic(dir, (t) => writeFileSync(join(t, 'a'), '1'));
    await writeDirAtomic(dir, (t) => writeFileSync(join(t, 'a'), '2'));
    expect(readdirSync(root).filter((n) => n.startsWith('d'))).toEqual(['d']);
  });
});

describe('torn metrics line', () => {
  it('readMetrics skips a torn last line and says so; gsteer monitor prints the run', async () => {
    writeFileAtomic(layout.config, 'runName: x\n');
    writeFileAtomic(
      layout.runJson,
      JSON.stringify({ v: 1, runId: 'x-00000000', epoch: 0, createdAt: '2026-01-01T00:00:00.000Z', policyUrl: null, initAdapter: null }),
    );
    writeFileAtomic(layout.metrics, '{"step":1,"reward":0.5}\n{"step":2,"reward":0.25}\n{"step":3,"rew');
    const notes: string[] = [];
    expect(readMetrics(layout.metrics, (m) => notes.push(m)).map((r) => r.step)).toEqual([1, 2]);
    expect(notes).toEqual([`${layout.metrics}:3: the last line is torn (a write cut short by a crash or a full disk); skipped`]);
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
    const err = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
    try {
      expect(await main(['monitor', root])).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
    expect(out.join('\n')).toMatch(/the last line is torn/);
    expect(out.join('\n')).toMatch(/\n\s+2\s+0\.2500/);
  });
});

describe('config extends cycles', () => {
  it('a -> b -> a is an error naming the chain, not a stack overflow', () => {
    writeFileSync(join(root, 'a.yaml'), 'extends: b.yaml\nseed: 1\n');
    writeFileSync(join(root, 'b.yaml'), 'extends: a.yaml\n');
    let e: unknown = null;
    try {
      loadConfig([join(root, 'a.yaml')]);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(InputError);
    expect((e as Error).message).toContain(`extends: forms a cycle (${join(root, 'a.yaml')} -> ${join(root, 'b.yaml')} -> ${join(root, 'a.yaml')})`);
    expect(existsSync(join(root, 'a.yaml'))).toBe(true);
  });
});
