// `gsteer model expand` (model/expand.ts): the layer map is LLaMA Pro's block
// expansion (a copy after the last layer of each group), the expanded model scores every
// token exactly as the source does (the new layers' output projections are zero, so they
// add nothing to the residual stream), the copied tensors are the source's, training moves
// the new layers, and bad requests are refused with the rule.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelWorkspace, SMALL_CFG } from './fixtures.ts';
import { sha256File } from '../../util/atomic.ts';
import { run } from '../../cli/commands/model.ts';
import type { SftExample } from '../../data/sft/example.ts';
import { toFloat32 } from '../../model/io/dtype.ts';
import { readSafetensors } from '../../model/io/safetensors.ts';
import { expandModel, layerMap } from '../../model/expand.ts';
import { baseKeptIds, initModel } from '../../model/init.ts';
import { loadModel, tokenLogprobs, type Qwen3Config } from '../../model/index.ts';
import { pretrainModel } from '../../trainer/pretrain/pretrain.ts';
import { qwen3Tokenizer } from '../../core/tokenizer.ts';

const CFG: Qwen3Config = { ...SMALL_CFG, numHiddenLayers: 2 };
const { path, fresh } = modelWorkspace('gsteer-expand-');
const weightsOf = (dir: string) => readSafetensors(join(dir, 'model.safetensors')).tensors;
function source(cfg: Qwen3Config = CFG, seed = 1): string {
  const dir = fresh();
  initModel(dir, cfg, { seed, keptIds: baseKeptIds() });
  return dir;
}
async function logprobsOf(dir: string, ids: number[][]): Promise<number[][]> {
  const m = await loadModel(dir);
  const out = tf.tidy(() => tokenLogprobs(m, null, { inputIds: ids }).logprobs.arraySync());
  m.dispose();
  return out;
}

describe('layerMap', () => {
  it('puts a copy after the last layer of each of G equal groups', () => {
    const show = (l: number, g: number) =>
      layerMap(l, g)
        .map((m) => (m.copy ? `${m.from}*` : `${m.from}`))
        .join(' ');
    expect(show(2, 1)).toBe('0 1 1*');
    expect(show(2, 2)).toBe('0 0* 1 1*');
    expect(show(4, 2)).toBe('0 1 1* 2 3 3*');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), (size, groups) => {
        const map = layerMap(size * groups, groups);
        expect(map.length).toBe(size * groups + groups);
        expect(map.filter((m) => !m.copy).map((m) => m.from)).toEqual([...Array(size * groups).keys()]); // the originals, in order
        map.forEach((m, i) => m.copy && expect(map[i - 1]).toEqual({ from: m.from, copy: false })); // each copy right after its layer
      }),
    );
  });

  it('refuses a group count that does not divide the layers', () => {
    expect(() => layerMap(2, 3)).toThrow(/--groups 3 must be a whole number from 1 to 2 that divides/);
    expect(() => layerMap(4, 3)).toThrow(/divides the model's 4 layers/);
    expect(() => layerMap(2, 0)).toThrow(/--groups 0/);
    expect(() => layerMap(2, 1.5)).toThrow(/--groups 1.5/);
  });
});

describe('expandModel', () => {
  it('gives the same logprobs as the source, with copies whose output projections are zero', async () => {
    const src = source();
    const ids = [[151644, 872, 198, 3838, 594, 279, 1850, 1616, 311, 3484, 151645, 198, 151644, 77091, 198, 20020, 25]];
    const want = await logprobsOf(src, ids);
    for (const groups of [1, 2]) {
      const out = fresh();
      const { layers } = expandModel(src, out, groups);
      expect(layers).toBe(2 + groups);
      expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).num_hidden_layers).toBe(2 + groups);
      const got = await logprobsOf(out, ids);
      got[0]!.forEach((v, t) => expect(v).toBeCloseTo(want[0]![t]!, 5));

      const [ws, wo] = [weightsOf(src), weightsOf(out)];
      const map = layerMap(2, groups);
      map.forEach(({ from, copy }, i) => {
        for (const [name, t] of ws) {
          const m = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
          if (!m || Number(m[1]) !== from) continue;
          const mine = wo.get(`model.layers.${i}.${m[2]}`)!;
          expect(mine.shape).toEqual(t.shape);
          const x = toFloat32(mine, name);
          if (copy && (m[2] === 'self_attn.o_proj.weight' || m[2] === 'mlp.down_proj.weight')) expect(x.every((v) => v === 0)).toBe(true);
          else expect(Array.from(x)).toEqual(Array.from(toFloat32(t, name)));
        }
      });
      for (const name of ['model.embed_tokens.weight', 'model.norm.weight', 'lm_head.weight'])
        expect(Array.from(toFloat32(wo.get(name)!, name))).toEqual(Array.from(toFloat32(ws.get(name)!, name)));
      expect([...wo.keys()].length).toBe(ws.size + groups * [...ws.keys()].filter((k) => k.startsWith('model.layers.0.')).length);

      const rec = JSON.parse(readFileSync(join(out, 'expand.json'), 'utf8')) as { groups: number; source: { dir: string; sha256: string } };
      expect(rec.groups).toBe(groups);
      expect(rec.source).toMatchObject({ dir: src, sha256: sha256File(join(src, 'model.safetensors')) });
      expect(readFileSync(join(out, 'vocab_map.json'), 'utf8')).toBe(readFileSync(join(src, 'vocab_map.json'), 'utf8'));
    }
  });

  it('training moves the new layer: its zero projections get gradients', async () => {
    const tok = qwen3Tokenizer();
    const kept = [
      ...baseKeptIds(),
      ...tok.encode(
        '<|im_start|>system\nuser\nassistant\n<think>\n\n</think>\n\nAnswer in the turn format.QUERY: trip 0 1 2 STATE:\n- budget | purpose: Money | status: covered | source: memory | value: 900\nPLAN: done\nACTION: STOP\nEXECUTE: Trip for 900',
      ),
    ];
    const src = fresh();
    initModel(src, CFG, { seed: 2, keptIds: kept });
    const out = fresh();
    expandModel(src, out, 1);
    const file = path('examples.jsonl');
    const ex = (i: number): SftExample => ({
      instanceId: `i${i}`,
      userId: 'u',
      trajectoryId: `i${i}/s0/o0/dialogue`,
      kind: 'dialogue',
      step: 0,
      steps: 1,
      action: 'STOP',
      input: [
        { role: 'system', content: 'Answer in the turn format.' },
        { role: 'user', content: `QUERY: trip ${i}` },
      ],
      target: 'STATE:\n- budget | purpose: Money | status: covered | source: memory | value: 900\nPLAN: done\nACTION: STOP\nEXECUTE: Trip for 900',
    });
    writeFileSync(file, [0, 1, 2].map((i) => JSON.stringify(ex(i))).join('\n'));
    await pretrainModel(out, file, tok, {
      context: 8,
      maxLen: 512,
      splitSeed: 1,
      heldOutFraction: 0,
      seed: 5,
      steps: 3,
      seconds: 60,
      batchSize: 3,
      lr: 1e-2,
      warmup: 1,
      weightDecay: 0,
      maxGradNorm: 1,
      augment: 0,
      progress: false,
      log: () => {},
    });
    const w = weightsOf(out);
    for (const name of ['model.layers.2.self_attn.o_proj.weight', 'model.layers.2.mlp.down_proj.weight'])
      expect(toFloat32(w.get(name)!, name).some((v) => v !== 0)).toBe(true);
  }, 30_000);

  it('refuses a non-empty --out, and the CLI names the layer map', async () => {
    const src = source();
    const out = fresh();
    expandModel(src, out, 1);
    expect(() => expandModel(src, out, 1)).toThrow(/--out .* exists and is not empty/);
    const cli = fresh();
    const lines: string[] = [];
    const err = console.error;
    console.error = (l: string) => void lines.push(l);
    try {
      expect(await run(['expand', '--out', cli, '--groups', '2', src])).toBe(0);
    } finally {
      console.error = err;
    }
    expect(lines.join('\n')).toMatch(/4 layers \(0, 0\*, 1, 1\*/);
    await expect(run(['expand', '--out', fresh(), src, src])).rejects.toThrow(/one model folder/);
  });
});
