// `gsteer model init` / `model logprobs`: a loadable tiny Qwen3 with a trimmed vocabulary,
// the same bytes for the same seed, and the CLI's logprobs equal to tokenLogprobs.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run } from '../../cli/commands/model.ts';
import { selectBackend } from '../../model/backend.ts';
import { initModel, PRESETS } from '../../model/init.ts';
import { loadModel, tokenLogprobs } from '../../model/index.ts';
import { readSafetensors } from '../../model/io/safetensors.ts';
import { toFloat32 } from '../../model/io/dtype.ts';

let tmp: string;
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'gsteer-init-'));
  await selectBackend('wasm', () => {});
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
beforeAll(() => writeFileSync(join(tmp, 'words.txt'), 'Plan a trip to Kyoto.'));

describe('model init', () => {
  it('writes a Qwen3 folder the loader reads, with the trimmed vocabulary; same seed same bytes', async () => {
    const kept = [0, 1, 2, 9707, 1879, 151643, 151644, 151645];
    const a = initModel(join(tmp, 'a'), PRESETS.tiny!, { seed: 7, keptIds: kept });
    initModel(join(tmp, 'b'), PRESETS.tiny!, { seed: 7, keptIds: [...kept].reverse() });
    initModel(join(tmp, 'c'), PRESETS.tiny!, { seed: 8, keptIds: kept });
    const bytes = (d: string) => readFileSync(join(tmp, d, 'model.safetensors'));
    expect(bytes('a').equals(bytes('b'))).toBe(true);
    expect(bytes('a').equals(bytes('c'))).toBe(false);
    expect(a.rows).toBe(kept.length);
    const cfg = JSON.parse(readFileSync(join(tmp, 'a', 'config.json'), 'utf8'));
    expect(cfg).toMatchObject({ model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], vocab_size: 151936, hidden_size: 64 });
    const model = await loadModel(join(tmp, 'a'));
    expect(model.rows).toBe(kept.length);
    expect(Array.from(model.vocab!.keptIds)).toEqual([...kept].sort((x, y) => x - y));
    // 2 layers x (q 64x64 + k,v 32x64 + o 64x64 + 3 x 192x64 + norms 2x64 + 2x16) + embed + final norm
    const perLayer = 64 * 64 * 2 + 32 * 64 * 2 + 192 * 64 * 3 + 64 * 2 + 16 * 2;
    expect(a.params).toBe(2 * perLayer + kept.length * 64 + 64);
    const { logprobs } = tokenLogprobs(model, null, { inputIds: [[151644, 9707, 1879, 151645]] });
    const lp = logprobs.arraySync()[0]!;
    // a random init near N(0, 0.02^2) is close to uniform over the kept rows
    lp.slice(1).forEach((v) => expect(Math.abs(v + Math.log(kept.length))).toBeLessThan(0.5));
    logprobs.dispose();
    model.dispose();
  });
  it('embedStd draws the input embedding at that std and nothing else changes', () => {
    const kept = Array.from({ length: 300 }, (_, i) => i);
    initModel(join(tmp, 'e1'), PRESETS.tiny!, { seed: 7, keptIds: kept });
    initModel(join(tmp, 'e2'), PRESETS.tiny!, { seed: 7, keptIds: kept, embedStd: 1 });
    const read = (d: string) => readSafetensors(join(tmp, d, 'model.safetensors')).tensors;
    const [t1, t2] = [read('e1'), read('e2')];
    const std = (xs: Float32Array) => Math.sqrt(xs.reduce((a, x) => a + x * x, 0) / xs.length);
    const e1 = toFloat32(t1.get('model.embed_tokens.weight')!, 'e1');
    const e2 = toFloat32(t2.get('model.embed_tokens.weight')!, 'e2');
    // 300 x 64 = 19,200 draws of N(0, s^2): the sample std is within 2% of s
    expect(std(e1)).toBeCloseTo(0.02, 3);
    expect(std(e2)).toBeGreaterThan(0.98);
    expect(std(e2)).toBeLessThan(1.02);
    // the same draws, scaled: the seeded stream is unchanged, so every other tensor is the same
    expect(e2[5]! / e1[5]!).toBeCloseTo(50, 3);
    const q = 'model.layers.1.self_attn.q_proj.weight';
    expect(Array.from(toFloat32(t2.get(q)!, q))).toEqual(Array.from(toFloat32(t1.get(q)!, q)));
  });
});

describe('gsteer model CLI', () => {
  it('init --vocab-from, then logprobs prints the same numbers as tokenLogprobs', async () => {
    const text = join(tmp, 'vocab.jsonl');
    writeFileSync(text, `${JSON.stringify({ query: 'Hello world, research plan' })}\n`);
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    const out = join(tmp, 'cli-model');
    expect(await run(['init', '--out', out, '--seed', '3', '--vocab-from', text])).toBe(0);
    const kept = JSON.parse(readFileSync(join(out, 'vocab_map.json'), 'utf8')) as { kept_ids: number[] };
    for (const id of [9707, 1879, 3412, 151644, 151645, 0, 255]) expect(kept.kept_ids).toContain(id);
    const input = join(tmp, 'in.jsonl');
    writeFileSync(input, '[151644, 9707, 1879]\n{"input_ids": [9707, 11]}\n');
    let printed = '';
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((s) => ((printed += String(s)), true));
    expect(await run(['logprobs', '--model', out, '--input', input, '--backend', 'wasm'])).toBe(0);
    write.mockRestore();
    err.mockRestore();
    const got = JSON.parse(printed) as number[][];
    const model = await loadModel(out);
    const { logprobs } = tokenLogprobs(model, null, {
      inputIds: [
        [151644, 9707, 1879],
        [9707, 11],
      ],
    });
    const want = logprobs.arraySync();
    expect(got[0]).toEqual(want[0]);
    expect(got[1]).toEqual(want[1]!.slice(0, 2));
    logprobs.dispose();
    model.dispose();
  });

  it("--layers overrides the preset's layer count (a cut Qwen3-0.6B shape for benchmarks)", async () => {
    expect(PRESETS['qwen3-0.6b']).toMatchObject({
      hiddenSize: 1024,
      intermediateSize: 3072,
      numHiddenLayers: 28,
      numAttentionHeads: 16,
      numKeyValueHeads: 8,
      headDim: 128,
    });
    await run(['init', '--out', join(tmp, 'l1'), '--preset', 'tiny', '--layers', '1', '--vocab-from', join(tmp, 'words.txt')]);
    expect(JSON.parse(readFileSync(join(tmp, 'l1', 'config.json'), 'utf8'))).toMatchObject({ num_hidden_layers: 1, hidden_size: 64 });
  });

  it('refuses unknown presets and bad input files with the reason', async () => {
    await expect(run(['init', '--out', join(tmp, 'x'), '--preset', 'huge'])).rejects.toThrow(/--preset huge is unknown; use one of tiny, small/);
    await expect(run(['init', '--out', join(tmp, 'x'), '--layers', '0'])).rejects.toThrow('--layers must be an integer >= 1 but is "0"');
    const bad = join(tmp, 'bad.jsonl');
    writeFileSync(bad, '[1, 2]\n["a"]\n');
    await expect(run(['logprobs', '--model', join(tmp, 'cli-model'), '--input', bad])).rejects.toThrow(/bad\.jsonl:2: expected a non-empty array of token ids/);
  });
});
