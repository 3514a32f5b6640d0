// PEFT-layout adapter IO: loads the reference fixture written by an independent writer,
// save -> load -> save is bit-exact, and mismatched adapters are refused with the reason.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../../model/backend.ts';
import { readSafetensors } from '../../../model/io/safetensors.ts';
import { createLora } from '../../../model/lora/lora.ts';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, adapterFingerprint, loadPeftAdapter, savePeftAdapter } from '../../../model/lora/peft.ts';
import { loadModel, type Qwen3Model } from '../../../model/index.ts';
import { InputError } from '../../../util/errors.ts';

const FIX = join(import.meta.dirname, '../../reference/fixtures');

describe('PEFT adapter IO', () => {
  let gqa: Qwen3Model;
  let tiny: Qwen3Model;
  let tmp: string;
  beforeAll(async () => {
    await selectBackend('wasm', () => {});
    gqa = await loadModel(join(FIX, 'gqa'));
    tiny = await loadModel(join(FIX, 'tiny'));
    tmp = mkdtempSync(join(tmpdir(), 'gsteer-peft-'));
  });
  afterAll(() => {
    gqa.dispose();
    tiny.dispose();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('loads the fixture and writes back the same tensor bytes under the same PEFT names', () => {
    const adapter = loadPeftAdapter(join(FIX, 'gqa/adapter'), gqa);
    expect(adapter.config).toEqual({
      r: 4,
      alpha: 8,
      dropout: 0.05,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    });
    const out = join(tmp, 'a1');
    savePeftAdapter(adapter, out, 'gsteer-fixture/gqa');
    const orig = readSafetensors(join(FIX, 'gqa/adapter', ADAPTER_WEIGHTS)).tensors;
    const mine = readSafetensors(join(out, ADAPTER_WEIGHTS)).tensors;
    expect([...mine.keys()].sort()).toEqual([...orig.keys()].sort());
    expect(mine.has('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight')).toBe(true);
    for (const [name, t] of orig) expect(Buffer.from(mine.get(name)!.data).equals(Buffer.from(t.data))).toBe(true);
    const cfg = JSON.parse(readFileSync(join(out, ADAPTER_CONFIG), 'utf8'));
    expect(cfg).toMatchObject({
      peft_type: 'LORA',
      r: 4,
      lora_alpha: 8,
      bias: 'none',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: 'gsteer-fixture/gqa',
      use_rslora: false,
      fan_in_fan_out: false,
    });
    adapter.dispose();
  });

  it('save -> load -> save is bit-exact (same fingerprint)', () => {
    const a = createLora(gqa, { r: 8, alpha: 16, dropout: 0.05, targetModules: ['q_proj', 'v_proj', 'up_proj'] }, 5);
    const f1 = savePeftAdapter(a, join(tmp, 'b1'), 'base');
    const b = loadPeftAdapter(join(tmp, 'b1'), gqa);
    const f2 = savePeftAdapter(b, join(tmp, 'b2'), 'base');
    expect(f2).toBe(f1);
    expect(adapterFingerprint(join(tmp, 'b2'))).toBe(f1);
    expect(readFileSync(join(tmp, 'b2', ADAPTER_WEIGHTS)).equals(readFileSync(join(tmp, 'b1', ADAPTER_WEIGHTS)))).toBe(true);
    a.dispose();
    b.dispose();
  });

  const refuse = (dir: string, model: () => Qwen3Model, pattern: RegExp) => {
    let err: unknown;
    try {
      loadPeftAdapter(dir, model()).dispose();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect(String((err as Error).message)).toMatch(pattern);
  };

  it('refuses an adapter for another base model, naming the tensor and both shapes', () => {
    refuse(join(FIX, 'gqa/adapter'), () => tiny, /q_proj\.lora_A\.weight" has shape \[4,32\] but r=4 and .* need \[4,64\]/);
  });

  it('refuses a rank that does not match the tensors', () => {
    const dir = join(tmp, 'rank');
    cpSync(join(FIX, 'gqa/adapter'), dir, { recursive: true });
    const cfg = JSON.parse(readFileSync(join(dir, ADAPTER_CONFIG), 'utf8'));
    writeFileSync(join(dir, ADAPTER_CONFIG), JSON.stringify({ ...cfg, r: 8 }));
    refuse(dir, () => gqa, /has shape \[4,32\] but r=8/);
  });

  it('refuses tensors for modules missing from target_modules, and missing tensors', () => {
    const dir = join(tmp, 'targets');
    cpSync(join(FIX, 'gqa/adapter'), dir, { recursive: true });
    const cfg = JSON.parse(readFileSync(join(dir, ADAPTER_CONFIG), 'utf8'));
    writeFileSync(join(dir, ADAPTER_CONFIG), JSON.stringify({ ...cfg, target_modules: ['q_proj', 'v_proj'] }));
    refuse(dir, () => gqa, /tensor\(s\) the config and model do not account for/);
    writeFileSync(join(dir, ADAPTER_CONFIG), JSON.stringify({ ...cfg, target_modules: [...cfg.target_modules, 'lm_head'] }));
    refuse(dir, () => gqa, /target_modules \["lm_head"\] are not Qwen3 projections/);
    const tinyDir = join(tmp, 'tiny-more');
    cpSync(join(FIX, 'tiny/adapter'), tinyDir, { recursive: true });
    const tcfg = JSON.parse(readFileSync(join(tinyDir, ADAPTER_CONFIG), 'utf8'));
    writeFileSync(join(tinyDir, ADAPTER_CONFIG), JSON.stringify({ ...tcfg, target_modules: ['q_proj', 'v_proj', 'o_proj'] }));
    refuse(tinyDir, () => tiny, /missing tensor "base_model\.model\.model\.layers\.0\.self_attn\.o_proj\.lora_A\.weight"/);
  });

  it('refuses LoRA variants it does not implement', () => {
    const dir = join(tmp, 'dora');
    cpSync(join(FIX, 'gqa/adapter'), dir, { recursive: true });
    const cfg = JSON.parse(readFileSync(join(dir, ADAPTER_CONFIG), 'utf8'));
    writeFileSync(join(dir, ADAPTER_CONFIG), JSON.stringify({ ...cfg, use_dora: true, peft_type: 'IA3' }));
    refuse(dir, () => gqa, /peft_type "IA3" is not supported[\s\S]*use_dora = true is not supported/);
  });
});
