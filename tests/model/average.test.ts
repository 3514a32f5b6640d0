// `gsteer model average` (model/average.ts): every tensor of the output is the
// weighted mean of the sources' tensors (checked element by element in plain JS), the
// mean of a model with itself is that model byte for byte and scores the same, the order
// of the sources does not matter, and mismatched models are refused with the file, the
// field and both values.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelWorkspace, SMALL_CFG } from './fixtures.ts';
import { sha256File } from '../../util/atomic.ts';
import { run } from '../../cli/commands/model.ts';
import { fromFloat32, toFloat32 } from '../../model/io/dtype.ts';
import { readSafetensors } from '../../model/io/safetensors.ts';
import { averageModels, averageWeights, weightedMean } from '../../model/average.ts';
import { baseKeptIds, initModel } from '../../model/init.ts';
import { loadModel, tokenLogprobs, type Qwen3Config } from '../../model/index.ts';

const CFG = SMALL_CFG;
const { path, fresh } = modelWorkspace('gsteer-average-');
/** A small model written by initModel with `seed` (same vocabulary for every seed). */
function model(seed: number, cfg: Qwen3Config = CFG, kept = baseKeptIds()): string {
  const dir = fresh();
  initModel(dir, cfg, { seed, keptIds: kept });
  return dir;
}
const weightsOf = (dir: string) => readSafetensors(join(dir, 'model.safetensors')).tensors;

describe('averageModels', () => {
  it('writes sum_k w_k * theta_k for every tensor, with the weights normalized', () => {
    const [a, b, c] = [model(1), model(2), model(3)];
    const out = fresh();
    const sources = averageModels([a, b, c], out, [1, 3, 4]);
    expect(sources.map((s) => s.weight)).toEqual([0.125, 0.375, 0.5]);
    const [ta, tb, tc, to] = [a, b, c, out].map(weightsOf);
    expect([...to!.keys()]).toEqual([...ta!.keys()]);
    for (const [name, t] of to!) {
      const [xa, xb, xc, xo] = [ta, tb, tc].map((m) => toFloat32(m!.get(name)!, name)).concat([toFloat32(t, name)]);
      expect(t.dtype).toBe('F32');
      expect(t.shape).toEqual(ta!.get(name)!.shape);
      for (let i = 0; i < xo!.length; i += 7) expect(xo![i]).toBeCloseTo(0.125 * xa![i]! + 0.375 * xb![i]! + 0.5 * xc![i]!, 6);
    }
    // config and vocabulary come along; the first model's training record does not; the sources are recorded
    for (const f of ['config.json', 'generation_config.json', 'vocab_map.json'])
      expect(readFileSync(join(out, f), 'utf8')).toBe(readFileSync(join(a, f), 'utf8'));
    const rec = JSON.parse(readFileSync(join(out, 'average.json'), 'utf8')) as { sources: { dir: string; weight: number; sha256: string }[] };
    expect(rec.sources.map((s) => [s.dir, s.weight, s.sha256])).toEqual(
      [a, b, c].map((d, k) => [d, [0.125, 0.375, 0.5][k], sha256File(join(d, 'model.safetensors'))]),
    );
  });

  it('the mean of a model with itself is that model, byte for byte, and scores the same tokens alike', async () => {
    const a = model(5);
    const out = fresh();
    averageModels([a, a, a], out, [0.2, 0.3, 0.5]);
    for (const [name, t] of weightsOf(out)) expect(Buffer.from(t.data).equals(Buffer.from(weightsOf(a).get(name)!.data))).toBe(true);
    const ids = [[151644, 872, 198, 9707, 151645]];
    const [ma, mo] = [await loadModel(a), await loadModel(out)];
    const [la, lo] = [ma, mo].map((m) => tf.tidy(() => tokenLogprobs(m, null, { inputIds: ids }).logprobs.arraySync()[0]!));
    expect(lo).toEqual(la);
    ma.dispose();
    mo.dispose();
  });

  it('does not depend on the order of the sources (property over weights)', () => {
    const [a, b] = [model(7), model(8)];
    fc.assert(
      fc.property(fc.double({ min: 0.05, max: 20, noNaN: true }), fc.double({ min: 0.05, max: 20, noNaN: true }), (wa, wb) => {
        const [o1, o2] = [fresh(), fresh()];
        averageModels([a, b], o1, [wa, wb]);
        averageModels([b, a], o2, [wb, wa]);
        const [t1, t2] = [weightsOf(o1), weightsOf(o2)];
        for (const [name, t] of t1) {
          const [x, y] = [toFloat32(t, name), toFloat32(t2.get(name)!, name)];
          for (let i = 0; i < x.length; i += 5) expect(x[i]).toBeCloseTo(y[i]!, 6);
        }
        rmSync(o1, { recursive: true });
        rmSync(o2, { recursive: true });
      }),
      { numRuns: 5 },
    );
  });

  it('keeps a half-precision dtype: mean of BF16 [1, 2] and [3, 4] is BF16 [2, 3]', () => {
    const t = weightedMean([fromFloat32(Float32Array.from([1, 2]), [2], 'BF16'), fromFloat32(Float32Array.from([3, 4]), [2], 'BF16')], [0.5, 0.5], 'w');
    expect(t.dtype).toBe('BF16');
    expect([...toFloat32(t, 'w')]).toEqual([2, 3]);
  });

  it('refuses models that differ in architecture or vocabulary, bad weights and a used output folder', () => {
    const a = model(1);
    const wide = model(1, { ...CFG, hiddenSize: 48, headDim: 16, numAttentionHeads: 3 });
    expect(() => averageModels([a, wide], fresh())).toThrow(/config\.json: hidden_size 48 differs from .*\(32\); only models of one architecture/);
    const other = model(1, CFG, [...baseKeptIds(), 9707]);
    expect(() => averageModels([a, other], fresh())).toThrow(/vocab_map\.json differs/);
    expect(() => averageWeights(2, [1])).toThrow(/--weights has 1 value\(s\) for 2 models/);
    expect(() => averageWeights(2, [1, -1])).toThrow(/weight 2 is -1; weights must be positive/);
    expect(() => averageWeights(1)).toThrow(/average at least 2/);
    const used = fresh();
    mkdirSync(used);
    writeFileSync(join(used, 'x'), '');
    expect(() => averageModels([a, model(2)], used)).toThrow(/--out .* exists and is not empty/);
    expect(() => averageModels([a, path('nowhere')], fresh())).toThrow(/nowhere\/config\.json: not found/);
  });
});

describe('gsteer model average', () => {
  it('writes the mean and names a missing argument', async () => {
    const [a, b] = [model(11), model(12)];
    const out = fresh();
    expect(await run(['average', '--out', out, '--weights', '1,1', a, b])).toBe(0);
    expect(existsSync(join(out, 'model.safetensors'))).toBe(true);
    const name = 'lm_head.weight';
    const [xa, xb, xo] = [a, b, out].map((d) => toFloat32(weightsOf(d).get(name)!, name));
    expect(xo![3]).toBeCloseTo((xa![3]! + xb![3]!) / 2, 6);
    await expect(run(['average', '--out', fresh(), a])).rejects.toThrow(/at least two model folders/);
  });
});
