// The ONNX encoder end to end: a real model.onnx (written by tests/encoders/onnx-writer.ts),
// a real WordPiece tokenizer.json, onnxruntime-node, @lenml/tokenizers. Expected vectors are
// worked by hand from the embedding table below.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOnnxRuntime, ONNX_INSTALL, OnnxEncoder } from '../../encoders/onnx.ts';
import { meanPoolNormalize, padBatch, truncateIds } from '../../encoders/pooling.ts';
import { InputError } from '../../util/errors.ts';
import { embeddingLookupModel, wordPieceTokenizerJson } from './onnx-writer.ts';

const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'hotel', 'budget', '##s', 'night'];
// Rows of E [8, 3]. [PAD] is huge so any pooling that forgets the mask is far off.
const E = [
  [50, 50, 50], // [PAD]
  [0, 0, 1], // [UNK]
  [1, 0, 0], // [CLS]
  [1, 0, 0], // [SEP]
  [0, 2, 0], // hotel
  [0, 0, 2], // budget
  [3, 0, 0], // ##s
  [0, 1, 1], // night
];
const s3 = 1 / Math.sqrt(3);
const s2 = 1 / Math.sqrt(2);
// "hotel budget" -> [CLS] hotel budget [SEP]: sum (2, 2, 2) -> unit (1,1,1)/sqrt3
// "Hotels"       -> lowercase, WordPiece "hotel" "##s": [CLS] hotel ##s [SEP]: (5, 2, 0)/sqrt29
// "hotel"        -> [CLS] hotel [SEP]: (2, 2, 0) -> (1,1,0)/sqrt2 (padded with one [PAD] in a batch with the first)
// "zebra"        -> [CLS] [UNK] [SEP]: (2, 0, 1)/sqrt5
const expected: Record<string, number[]> = {
  'hotel budget': [s3, s3, s3],
  Hotels: [5 / Math.sqrt(29), 2 / Math.sqrt(29), 0],
  hotel: [s2, s2, 0],
  zebra: [2 / Math.sqrt(5), 0, 1 / Math.sqrt(5)],
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gsteer-onnx-'));
  writeFileSync(join(dir, 'model.onnx'), embeddingLookupModel(E));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(wordPieceTokenizerJson(vocab)));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({ tokenizer_class: 'BertTokenizer', pad_token: '[PAD]', cls_token: '[CLS]', sep_token: '[SEP]', unk_token: '[UNK]', model_max_length: 512 }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const close = (a: Float32Array, b: number[]) => b.forEach((x, i) => expect(a[i]).toBeCloseTo(x, 6));

describe('OnnxEncoder on a real ONNX file', () => {
  it('tokenizes, runs, mean-pools over the mask and normalizes (hand-worked vectors)', async () => {
    const enc = new OnnxEncoder(dir, 64);
    const texts = Object.keys(expected);
    const vecs = await enc.embed(texts);
    texts.forEach((t, i) => close(vecs[i]!, expected[t]!));
    expect(enc.dim).toBe(3);
  });

  it('batching changes nothing (batches of 1, 2 and all)', async () => {
    const texts = ['hotel', 'hotel budget', 'zebra', 'Hotels', 'hotel'];
    const all = await new OnnxEncoder(dir, 64).embed(texts);
    for (const bs of [1, 2]) {
      const got = await new OnnxEncoder(dir, bs).embed(texts);
      got.forEach((v, i) => close(v, Array.from(all[i]!)));
    }
  });

  it('truncates to sentence_bert_config max_seq_length, keeping [SEP] last', async () => {
    const d2 = mkdtempSync(join(tmpdir(), 'gsteer-onnx-'));
    try {
      for (const f of ['model.onnx', 'tokenizer.json', 'tokenizer_config.json'])
        writeFileSync(
          join(d2, f),
          f === 'model.onnx' ? embeddingLookupModel(E) : JSON.stringify(f === 'tokenizer.json' ? wordPieceTokenizerJson(vocab) : { pad_token: '[PAD]' }),
        );
      writeFileSync(join(d2, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: 4, do_lower_case: false }));
      // [CLS] hotel budget night [SEP] (5 tokens) -> [CLS] hotel budget [SEP] = the "hotel budget" vector
      const [v] = await new OnnxEncoder(d2, 8).embed(['hotel budget night']);
      close(v!, expected['hotel budget']!);
    } finally {
      rmSync(d2, { recursive: true, force: true });
    }
  });

  it('a folder without model.onnx is an InputError naming the file', async () => {
    const err = await new OnnxEncoder(join(dir, 'nope')).embed(['x']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/nope\/model\.onnx: not found/);
  });
});

describe('onnxruntime-node is optional', () => {
  it('loads where it is installed (a devDependency of this checkout)', async () => {
    const ort = await loadOnnxRuntime();
    expect(typeof ort.InferenceSession.create).toBe('function');
  });

  it('where it is absent: an InputError naming encoder.kind onnx and the install command', async () => {
    const err = await loadOnnxRuntime('onnxruntime-node-not-installed').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toContain('encoder.kind: onnx needs onnxruntime-node-not-installed');
    expect((err as Error).message).toContain(ONNX_INSTALL);
    expect(ONNX_INSTALL).toMatch(/npm install --save-exact onnxruntime-node@1\.30\.0$/);
  });
});

describe('pooling helpers', () => {
  it('meanPoolNormalize ignores masked positions; an all-zero mask gives the zero vector', () => {
    // B = 2, T = 2, D = 2: row 0 keeps both tokens (1,0)+(0,1) -> (0.5,0.5) -> (s2, s2);
    // row 1 keeps none.
    const h = Float32Array.from([1, 0, 0, 1, 9, 9, 9, 9]);
    const [a, b] = meanPoolNormalize(
      h,
      [2, 2, 2],
      [
        [1, 1],
        [0, 0],
      ],
    );
    close(a!, [s2, s2]);
    expect(Array.from(b!)).toEqual([0, 0]);
  });

  it('padBatch right-pads with the pad id and a 0 mask', () => {
    expect(padBatch([[5, 6, 7], [8]], 0)).toEqual({
      ids: [
        [5, 6, 7],
        [8, 0, 0],
      ],
      mask: [
        [1, 1, 1],
        [1, 0, 0],
      ],
      T: 3,
    });
  });

  it('truncateIds keeps a final special token only when there is one', () => {
    expect(truncateIds([2, 4, 5, 7, 3], 4, true)).toEqual([2, 4, 5, 3]);
    expect(truncateIds([4, 5, 7], 2, false)).toEqual([4, 5]);
    expect(truncateIds([4, 5], 4, true)).toEqual([4, 5]);
  });
});
