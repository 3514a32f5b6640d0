// Test helper: writes a real (tiny) ONNX model file by encoding the ONNX protobuf messages
// by hand (onnx/onnx.proto field numbers), so the ONNX encoder is tested end to end through
// onnxruntime-node without any downloaded model. The model is an embedding lookup:
//   last_hidden_state [B, T, D] = Gather(E [V, D], input_ids [B, T])
// attention_mask [B, T] is a declared input the graph does not read (valid ONNX), as in a
// model whose padded positions still produce outputs: pooling must mask them itself.

type Bytes = number[];

function varint(n: number | bigint): Bytes {
  let v = BigInt(n);
  const out: Bytes = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
const vInt = (field: number, n: number) => [...key(field, 0), ...varint(n)];
const vBytes = (field: number, b: Bytes) => [...key(field, 2), ...varint(b.length), ...b];
const vStr = (field: number, s: string) => vBytes(field, [...new TextEncoder().encode(s)]);

const FLOAT = 1;
const INT64 = 7;

/** TensorShapeProto.Dimension: dim_value = 1, dim_param = 2. */
const dim = (d: number | string) => vBytes(1, typeof d === 'number' ? vInt(1, d) : vStr(2, d));
/** ValueInfoProto { name = 1, type = 2 { tensor_type = 1 { elem_type = 1, shape = 2 } } } */
function valueInfo(name: string, elemType: number, shape: (number | string)[]): Bytes {
  const tensorType = [...vInt(1, elemType), ...vBytes(2, shape.flatMap(dim))];
  return [...vStr(1, name), ...vBytes(2, vBytes(1, tensorType))];
}
/** TensorProto { dims = 1, data_type = 2, name = 8, raw_data = 9 (little-endian) } */
function floatTensor(name: string, dims: number[], values: number[]): Bytes {
  const raw = new Uint8Array(Float32Array.from(values).buffer);
  return [...dims.flatMap((d) => vInt(1, d)), ...vInt(2, FLOAT), ...vStr(8, name), ...vBytes(9, [...raw])];
}
/** NodeProto { input = 1, output = 2, name = 3, op_type = 4 } */
function node(op: string, inputs: string[], outputs: string[], name: string): Bytes {
  return [...inputs.flatMap((i) => vStr(1, i)), ...outputs.flatMap((o) => vStr(2, o)), ...vStr(3, name), ...vStr(4, op)];
}

/** The bytes of a model.onnx whose token embeddings are rows of `table` [V][D]. */
export function embeddingLookupModel(table: number[][]): Uint8Array {
  const V = table.length;
  const D = table[0]!.length;
  const graph = [
    ...vBytes(1, node('Gather', ['E', 'input_ids'], ['last_hidden_state'], 'lookup')),
    ...vStr(2, 'tiny_encoder'),
    ...vBytes(5, floatTensor('E', [V, D], table.flat())),
    ...vBytes(11, valueInfo('input_ids', INT64, ['batch', 'seq'])),
    ...vBytes(11, valueInfo('attention_mask', INT64, ['batch', 'seq'])),
    ...vBytes(12, valueInfo('last_hidden_state', FLOAT, ['batch', 'seq', D])),
  ];
  // ModelProto { ir_version = 1, producer_name = 2, graph = 7, opset_import = 8 { domain = 1, version = 2 } }
  const model = [...vInt(1, 8), ...vStr(2, 'gsteer-test'), ...vBytes(7, graph), ...vBytes(8, [...vStr(1, ''), ...vInt(2, 13)])];
  return Uint8Array.from(model);
}

/** A BERT-style WordPiece tokenizer.json over `vocab` (ids in order), [CLS] ... [SEP] template. */
export function wordPieceTokenizerJson(vocab: string[]): unknown {
  const id = (t: string) => vocab.indexOf(t);
  const special = ['[PAD]', '[UNK]', '[CLS]', '[SEP]'];
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: special.map((content) => ({ id: id(content), content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [id('[CLS]')], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [id('[SEP]')], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
    },
  };
}
