import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseQwen3Config, type Qwen3Config } from '../../model/config.ts';
import { baseParams, computedRows, layerFloatsPerToken, loraParams, maskFloats, planMemory, verdicts } from '../../trainer/plan.ts';
import { runPlan } from '../../cli/commands/model-plan.ts';
import { PROJ_NAMES } from '../../model/lora/types.ts';
import * as tf from '@tensorflow/tfjs';
import { createLora } from '../../model/lora/lora.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import { LoraSchema } from '../../configs/schema.ts';
import { randomQwen3 } from './step-fixtures.ts';
import { buildPrefixTree } from '../../model/prefix-tree.ts';

const small: Qwen3Config = {
  vocabSize: 32,
  hiddenSize: 8,
  intermediateSize: 16,
  numHiddenLayers: 2,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  headDim: 4,
  rmsNormEps: 1e-6,
  ropeTheta: 1e6,
  tieWordEmbeddings: true,
  maxPositionEmbeddings: 64,
};

describe('planMemory on a small config, worked by hand', () => {
  // D 8, H 2, KV 1, hd 4 (q width 8, kv width 4), F 16, L 2, V 32 tied; LoRA r 2 on q, v;
  // B 1, T 4 (N = 4 tokens), no dropout.
  const o = { seqLen: 4, microBatch: 1, loraR: 2, targetModules: ['q_proj', 'v_proj'] as const, dropout: false };

  it('counts parameters', () => {
    // embed 32*8 = 256; per layer q 64 + k 32 + v 32 + o 64 + gate 128 + up 128 + down 128 = 576,
    // + q_norm 4 + k_norm 4 + two layer norms 16 = 600; x 2 layers = 1200; final norm 8
    expect(baseParams(small)).toBe(256 + 1200 + 8);
    // LoRA q: 2*(8+8) = 32, v: 2*(8+4) = 24 -> 56 per layer x 2
    expect(loraParams(small, 2, o.targetModules)).toBe(112);
  });

  it('counts logits and mask rows for the loss tokens only when given (issue 17: lm_head over scored positions)', () => {
    const base = { ...o, recompute: false };
    const all = planMemory(small, { ...base, distinctMasks: 2 });
    const part = planMemory(small, { ...base, distinctMasks: 2, lossTokens: 1 });
    const get = (p: typeof all, item: string) => p.find((l) => l.item.startsWith(item))!.bytes;
    expect(get(part, 'logits')).toBeCloseTo(get(all, 'logits') / 4, 9); // 1 of the 4 positions
    expect(get(part, 'grammar masks')).toBeCloseTo(maskFloats(1, 32, 2) * 4, 9);
    expect(get(part, 'activations')).toBe(get(all, 'activations'));
    expect(planMemory(small, { ...base, lossTokens: 99 })).toEqual(planMemory(small, base)); // capped at B*T
  });

  it('counts activations and the totals', () => {
    // counted floats per token: projection outputs 8+4+4+8+16+16+8 = 64, LoRA q 2*8+2*2 = 20,
    // v 2*4+4 = 12 -> 96; norms 2*3*8 = 48; q/k norm + rope 8*8 + 8*4 + k transpose 4 = 100;
    // transposes 4 + 2*8 = 20; mlp 3*16 = 48; residual adds 16 -> 328; x TAPE_FACTOR 1.8 = 590.4
    expect(layerFloatsPerToken(small, o)).toBeCloseTo(590.4, 9);
    // layer = 590.4 * 4 tokens + attention 2.5 * B*H*T*T = 2.5 * 32 = 80 -> 2441.6 floats = 9766.4 B
    // no recompute: 2 layers + 1 in flight = 29299.2; logits 6.5 * 4 * 32 * 4 B = 3328;
    // edges 13 * 4 * 8 * 4 B = 1664; weights (1464 + 4 * 112) * 4 B = 7648 -> total 41939.2
    const off = planMemory(small, { ...o, recompute: false });
    expect(off.find((l) => l.item === 'activations')!.bytes).toBeCloseTo(29299.2, 6);
    expect(off.find((l) => l.item === 'logits [B,T,V]')!.bytes).toBeCloseTo(3328, 9);
    expect(off.at(-1)!.bytes).toBeCloseTo(41939.2, 6);
    // recompute: layer inputs 2 * 4 * 8 * 4 B = 256 + two live layers 19532.8 -> total 32428.8
    const on = planMemory(small, { ...o, recompute: true });
    expect(on.at(-1)!.bytes).toBeCloseTo(32428.8, 6);
    // dropout adds 4 floats per LoRA input float: q and v read D = 8 each -> 64 per token
    expect(layerFloatsPerToken(small, { ...o, dropout: true }) - layerFloatsPerToken(small, o)).toBeCloseTo(64, 9);
  });

  it('counts prefix grouping: a shared head of P tokens computed once (--shared-prefix)', () => {
    // B 3, T 4, P 2: rows 2 + 3 * (4 - 2) = 8 (not 12), as the prefix tree of such a batch has.
    expect(computedRows(3, 4, 2)).toBe(8);
    expect(
      buildPrefixTree([
        [1, 2, 3, 4],
        [1, 2, 5, 6],
        [1, 2, 7, 8],
      ]).rows,
    ).toBe(8);
    // layer: 590.4 * 8 rows = 4723.2; attention 2.5 * H 2 * (P^2 4 + B(T-P)T 24) = 140, plus the
    // suffixes' gathered prefix k/v: B 3 * 3 copies * 2 (k, v) * P 2 * KV 1 * hd 4 = 144
    // -> 5007.2 floats = 20028.8 B; 2 layers + 1 in flight = 60086.4 B (87897.6 B without)
    const shared = planMemory(small, { ...o, microBatch: 3, recompute: false, sharedPrefix: 2 });
    expect(shared.find((l) => l.item === 'activations')!.bytes).toBeCloseTo(60086.4, 6);
    expect(planMemory(small, { ...o, microBatch: 3, recompute: false }).find((l) => l.item === 'activations')!.bytes).toBeCloseTo(87897.6, 6);
    // edges 13 * 8 rows * D 8 * 4 B = 3328; the logits keep every loss token: 6.5 * 12 * 32 * 4 B = 9984
    expect(shared.find((l) => l.item === 'embeddings / final norm')!.bytes).toBeCloseTo(3328, 9);
    expect(shared.find((l) => l.item === 'logits [B,T,V]')!.bytes).toBeCloseTo(9984, 9);
    expect(shared.find((l) => l.item === 'prefix grouping')!.note).toMatch(/8 of 12 token rows \(67%\)/);
  });

  it('predicts the forward memory tfjs really holds, on a shape it was not calibrated on (within 15%)', async () => {
    await tf.setBackend('cpu');
    const cfg: Qwen3Config = { ...small, vocabSize: 300, hiddenSize: 48, intermediateSize: 128, numAttentionHeads: 6, numKeyValueHeads: 3, headDim: 8 };
    const T = 48;
    const B = 2;
    const model = randomQwen3(cfg, 5);
    const a = createLora(model, LoraSchema.parse({ dropout: 0.05 }), 5);
    const ids = Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => (t * (b + 2)) % cfg.vocabSize));
    const base = tf.memory().numBytes;
    let measured = 0;
    const { value, grads } = tf.variableGrads(() => {
      const lp = tokenLogprobs(model, a, { inputIds: ids }, { training: true, dropoutSeed: 3 }).logprobs;
      const loss = tf.neg(tf.mean(lp)) as tf.Scalar;
      measured = tf.memory().numBytes - base; // every forward intermediate is alive here
      return loss;
    }, a.variables());
    tf.dispose([value, ...Object.values(grads)]);
    a.dispose();
    model.dispose();
    // forward part of the plan: L layers, logits without the gradient copy, edges
    const lines = planMemory(cfg, { seqLen: T, microBatch: B, loraR: 8, targetModules: PROJ_NAMES, recompute: false, dropout: true });
    const get = (k: string) => lines.find((l) => l.item.startsWith(k))!.bytes;
    const L = cfg.numHiddenLayers;
    const predicted = (get('activations') * L) / (L + 1) + (get('logits') * 5.5) / 6.5 + get('embeddings');
    expect(measured / predicted).toBeGreaterThan(0.85);
    expect(measured / predicted).toBeLessThan(1.15);
  });

  it('counts the grammar masks of constrained turns, and predicts what a masked forward adds (within 15%)', async () => {
    // Worked by hand for `small` (V 32), B 1, T 4, M 3 distinct masks:
    // table (3 + 1) * 32 = 128 floats + MASK_COPIES 2 * 4 * 32 = 256 -> 384 floats = 1536 B
    const o = { seqLen: 4, microBatch: 1, loraR: 2, targetModules: ['q_proj'] as const, dropout: false, recompute: false };
    const masked = planMemory(small, { ...o, distinctMasks: 3 });
    expect(masked.find((l) => l.item === 'grammar masks')!.bytes).toBe(1536);
    expect(masked.at(-1)!.bytes - planMemory(small, o).at(-1)!.bytes).toBe(1536);
    // Measured: forward bytes alive with masks minus without, on a shape of its own.
    await tf.setBackend('cpu');
    const cfg: Qwen3Config = { ...small, vocabSize: 400, hiddenSize: 16 };
    const [B, T, M] = [2, 40, 6];
    const model = randomQwen3(cfg, 3);
    const a = createLora(model, LoraSchema.parse({ dropout: 0 }), 3);
    const ids = Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, t) => (t * (b + 3)) % cfg.vocabSize));
    // M distinct masks (equal masks are merged, model/token-masks.ts maskIndex): mask k allows every id but k
    const allBut = (k: number) => {
      const m = new Int32Array(Math.ceil(cfg.vocabSize / 32)).fill(-1);
      m[k >> 5]! &= ~(1 << (k & 31));
      return m;
    };
    const masks = ids.map((_, b) => ({
      table: Array.from({ length: M / B }, (_, j) => allBut(1 + b * (M / B) + j)),
      index: Array.from({ length: T }, (_, t) => t % (M / B)),
    }));
    const forwardBytes = (withMasks: boolean) => {
      const base = tf.memory().numBytes;
      let held = 0;
      const { value, grads } = tf.variableGrads(() => {
        const lp = tokenLogprobs(model, a, { inputIds: ids, ...(withMasks ? { masks } : {}) }, { maskPath: 'gather' }).logprobs; // the plan counts the [N, V] bias path, the worst case
        held = tf.memory().numBytes - base;
        return tf.neg(tf.mean(lp)) as tf.Scalar;
      }, a.variables());
      tf.dispose([value, ...Object.values(grads)]);
      return held;
    };
    const extra = forwardBytes(true) - forwardBytes(false);
    a.dispose();
    model.dispose();
    // the scored positions are B * (T - 1): column 0 predicts nothing
    const predicted = maskFloats(B * (T - 1), cfg.vocabSize, M) * 4;
    expect(extra / predicted).toBeGreaterThan(0.85);
    expect(extra / predicted).toBeLessThan(1.15);
  });

  it('matches the published sizes of Qwen3-8B (8.19B params; PEFT r=8 all-linear 21,823,488)', () => {
    const q8 = parseQwen3Config(
      {
        architectures: ['Qwen3ForCausalLM'],
        model_type: 'qwen3',
        vocab_size: 151936,
        hidden_size: 4096,
        intermediate_size: 12288,
        num_hidden_layers: 36,
        num_attention_heads: 32,
        num_key_value_heads: 8,
        head_dim: 128,
        tie_word_embeddings: false,
      },
      'config.json',
    );
    expect(baseParams(q8) / 1e9).toBeCloseTo(8.19, 2);
    expect(loraParams(q8, 8, PROJ_NAMES)).toBe(21_823_488);
  });

  it('gives GPU verdicts at 90% of the card', () => {
    const v = verdicts(50 * 2 ** 30);
    expect(v.map((x) => [x.gpu, x.fits])).toEqual([
      ['A100-40GB', false],
      ['A100-80GB', true],
      ['H100-80GB', true],
    ]);
  });
});

describe('gsteer model plan', () => {
  it('prints the table and the verdicts from a folder holding only config.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-plan-'));
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({
        architectures: ['Qwen3ForCausalLM'],
        model_type: 'qwen3',
        vocab_size: 32,
        hidden_size: 8,
        intermediate_size: 16,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        num_key_value_heads: 1,
        head_dim: 4,
        tie_word_embeddings: true,
      }),
    );
    const out: string[] = [];
    const log = console.log;
    console.log = (s: string) => out.push(s);
    try {
      expect(await runPlan(['--model', dir, '--seq-len', '4', '--micro-batch', '1', '--lora-r', '2', '--targets', 'q_proj,v_proj', '--no-dropout'])).toBe(0);
    } finally {
      console.log = log;
    }
    const text = out.join('\n');
    expect(text).toMatch(/total\s+40\.96 KiB/); // 41939.2 B
    expect(text).toMatch(/A100-40GB .* fits/);
    // --constrained adds the masks line: 41939.2 + 1536 B (worked above) = 43475.2 B = 42.46 KiB
    out.length = 0;
    console.log = (s: string) => out.push(s);
    try {
      expect(
        await runPlan([
          '--model',
          dir,
          '--seq-len',
          '4',
          '--micro-batch',
          '1',
          '--lora-r',
          '2',
          '--targets',
          'q_proj,v_proj',
          '--no-dropout',
          '--constrained',
          '--distinct-masks',
          '3',
        ]),
      ).toBe(0);
    } finally {
      console.log = log;
    }
    expect(out.join('\n')).toMatch(/grammar masks\s+1\.50 KiB\s+constrained turns: 3 distinct/);
    expect(out.join('\n')).toMatch(/total\s+42\.46 KiB/);
    // --loss-tokens 2: the logits go over 2 positions instead of 4: 6.5 copies x 2 x 32 rows x 4 B
    // = 1664 B less, 41939.2 - 1664 = 40275.2 B = 39.33 KiB
    out.length = 0;
    console.log = (s: string) => out.push(s);
    try {
      expect(
        await runPlan([
          '--model',
          dir,
          '--seq-len',
          '4',
          '--micro-batch',
          '1',
          '--lora-r',
          '2',
          '--targets',
          'q_proj,v_proj',
          '--no-dropout',
          '--loss-tokens',
          '2',
        ]),
      ).toBe(0);
    } finally {
      console.log = log;
    }
    expect(out.join('\n')).toMatch(/\(2 positions x V rows 32\)/);
    expect(out.join('\n')).toMatch(/total\s+39\.33 KiB/);
    await expect(runPlan(['--model', dir, '--seq-len', '4', '--micro-batch', '1', '--loss-tokens', '5'])).rejects.toThrow(
      /--loss-tokens 5 is more than the micro-batch's 4 tokens/,
    );
    await expect(runPlan(['--model', dir, '--seq-len', '4', '--micro-batch', '1', '--distinct-masks', '3'])).rejects.toThrow(
      /--distinct-masks needs --constrained/,
    );
    await expect(runPlan(['--model', dir, '--seq-len', 'x', '--micro-batch', '1'])).rejects.toThrow(/--seq-len x must be a positive integer/);
    await expect(runPlan(['--model', dir, '--seq-len', '4', '--micro-batch', '1', '--targets', 'qproj'])).rejects.toThrow(/allowed: q_proj/);
  });
});
