// Finite numbers or nothing (issue 32 item 5), on the real tfjs Qwen3 + LoRA: a NaN
// advantage makes the loss and every gradient NaN; the step is skipped (counted as
// nonfinite_skipped 1), and the adapter and optimizer state stay exactly as they were (without
// the check both become NaN everywhere). An adapter or optimizer state holding a NaN is
// never written, and a PEFT file holding one is refused on loading (what gsteer serve and
// resume read), naming the tensor and the index.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, describe, expect, it } from 'vitest';
import { trainStep, type PolicyBatch } from '../../trainer/step.ts';
import { AdamW } from '../../trainer/optim/adamw.ts';
import { readOptimizerFile, writeOptimizerFile } from '../../trainer/optim/state-file.ts';
import { createLora } from '../../model/lora/lora.ts';
import { loadPeftAdapter, savePeftAdapter } from '../../model/lora/peft.ts';
import { readSafetensors, writeSafetensors } from '../../model/io/safetensors.ts';
import { fromFloat32, toFloat32 } from '../../model/io/dtype.ts';
import { loraPolicy } from '../../trainer/policy-lora.ts';
import { LoraSchema } from '../../configs/schema.ts';
import type { Qwen3Config } from '../../model/config.ts';
import { InputError } from '../../util/errors.ts';
import { randomQwen3 } from './step-fixtures.ts';

await tf.setBackend('cpu');

const cfg: Qwen3Config = {
  vocabSize: 48,
  hiddenSize: 32,
  intermediateSize: 64,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 128,
};
const model = randomQwen3(cfg, 11);
const inputIds = [
  [1, 2, 3, 4, 5, 6],
  [7, 8, 9, 10, 11, 12],
];
const completionMask = inputIds.map((r) => r.map((_, t) => (t >= 3 ? 1 : 0)));
const grpo = { lossType: 'grpo' as const, epsilon: 0.2, betaKl: 0, tisCap: null };
const dir = mkdtempSync(join(tmpdir(), 'gsteer-nonfinite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const snapshot = (vars: tf.Variable[]) => vars.map((v) => Float32Array.from(v.dataSync()));

describe('a non-finite loss or gradient norm', () => {
  it('skips the step: adapter and optimizer unchanged, nonfinite_skipped 1; a finite batch then steps', () => {
    const adapter = createLora(model, LoraSchema.parse({ dropout: 0, r: 4, alpha: 8 }), 1);
    const vars = adapter.variables();
    const opt = new AdamW(vars, { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
    const policy = loraPolicy(model, adapter);
    const before = snapshot(vars);
    const nan: PolicyBatch = { kind: 'policy', inputIds, completionMask, advantages: [NaN, 1] };
    const m = trainStep(policy, opt, nan, { lr: 1e-2, microBatchSize: 2, maxGradNorm: 1, grpo });
    expect(Number.isNaN(m.loss) || Number.isNaN(m.grad_norm)).toBe(true);
    expect(m.nonfinite_skipped).toBe(1);
    expect(snapshot(vars)).toEqual(before); // bit for bit
    expect(opt.state().step).toBe(0);
    expect(opt.state().m.every((x) => x.every((y) => y === 0))).toBe(true);
    const ok = trainStep(policy, opt, { ...nan, advantages: [1, -1] }, { lr: 1e-2, microBatchSize: 2, maxGradNorm: 1, grpo });
    expect(ok.nonfinite_skipped).toBe(0);
    expect(snapshot(vars)).not.toEqual(before);
    expect(snapshot(vars).every((x) => x.every(Number.isFinite))).toBe(true);
    opt.dispose();
    adapter.dispose();
  });
});

describe('weights with a NaN', () => {
  it('an adapter with a NaN is not written; a PEFT file with one is refused on loading, naming tensor and index', () => {
    const adapter = createLora(model, LoraSchema.parse({ dropout: 0, r: 4, alpha: 8, targetModules: ['q_proj'] }), 2);
    const good = join(dir, 'good');
    savePeftAdapter(adapter, good, 'tiny');
    const b = adapter.variables().find((v) => v.name.endsWith('lora_B'))!;
    b.assign(tf.fill(b.shape, NaN));
    expect(() => savePeftAdapter(adapter, join(dir, 'bad'), 'tiny')).toThrow(/holds NaN at index 0; an adapter with non-finite weights is not written/);
    // a damaged file: one value of the good adapter set to Infinity
    const file = join(good, 'adapter_model.safetensors');
    const { tensors } = readSafetensors(file);
    const [name, t] = [...tensors].find(([n]) => n.includes('lora_A'))!;
    const values = toFloat32(t, name);
    values[5] = Infinity;
    tensors.set(name, fromFloat32(values, t.shape));
    writeSafetensors(file, tensors);
    const e = (() => {
      try {
        loadPeftAdapter(good, model);
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(e).toBeInstanceOf(InputError);
    expect((e as Error).message).toContain(`tensor "${name}" holds Infinity at index 5; the adapter is damaged or comes from a diverged run`);
    adapter.dispose();
  });

  it("optimizer state with a NaN is not written; a file holding null (JSON's NaN) is refused", () => {
    const adapter = createLora(model, LoraSchema.parse({ dropout: 0, r: 4, alpha: 8, targetModules: ['q_proj'] }), 3);
    const opt = new AdamW(adapter.variables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
    const file = join(dir, 'optimizer.json');
    writeOptimizerFile(file, opt);
    const s = JSON.parse(readFileSync(file, 'utf8'));
    s.m[0][2] = null;
    writeFileSync(file, JSON.stringify(s));
    expect(() => readOptimizerFile(file, opt)).toThrow(/m\[0\] .* holds null at index 2, not a finite number/);
    const bad = new AdamW(adapter.variables(), { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
    const st = bad.state();
    st.m[0]![1] = NaN;
    bad.load(st);
    expect(() => writeOptimizerFile(join(dir, 'o2.json'), bad)).toThrow(/holds NaN at index 1; non-finite optimizer state is not written/);
    opt.dispose();
    bad.dispose();
    adapter.dispose();
  });
});
