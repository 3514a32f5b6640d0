// method §9: phi from a sentence-transformers ONNX export on disk (all-mpnet-base-v2 in the
// paper), run with onnxruntime-node, an optional package of gsteer (not installed with it:
// its install script downloads a CUDA build; see ONNX_INSTALL), loaded on first use. The folder holds:
//   model.onnx                 inputs input_ids [B, T] and attention_mask [B, T] (int64;
//                              token_type_ids too if the model declares it), output token
//                              embeddings [B, T, D] ("last_hidden_state"/"token_embeddings")
//   tokenizer.json             the Hugging Face fast-tokenizer file
//   tokenizer_config.json      optional (pad token, model_max_length)
//   sentence_bert_config.json  optional (max_seq_length; 384 for all-mpnet-base-v2)
// Texts are tokenized with @lenml/tokenizers, run in batches of `batchSize`, mean-pooled over
// the attention mask and L2-normalized (encoders/pooling.ts). A model whose only
// output is already pooled [B, D] is used as is (then normalized).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { TokenizerLoader } from '@lenml/tokenizers';
import type { Encoder } from '../core/encoder.ts';
import { InputError } from '../util/errors.ts';
import { importOptional } from '../util/optional.ts';
import { meanPoolNormalize, padBatch, splitNormalize, truncateIds } from './pooling.ts';

type Tokenizer = ReturnType<typeof TokenizerLoader.fromPreTrained>;

const TOKEN_OUTPUTS = ['token_embeddings', 'last_hidden_state'];

function readJson(file: string, required: boolean): Record<string, unknown> | null {
  if (!existsSync(file)) {
    if (required)
      throw new InputError(`${file}: not found; encoder.path must be a folder with model.onnx and tokenizer.json (a sentence-transformers ONNX export)`);
    return null;
  }
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new InputError(`${file}: not valid JSON (${(e as Error).message})`);
  }
}

/** How to add the runtime to a project that installed gsteer (the env var skips its CUDA download). */
export const ONNX_INSTALL = 'ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm install --save-exact onnxruntime-node@1.30.0';

/** onnxruntime-node, or an InputError naming the install command when it is not installed. */
export async function loadOnnxRuntime(pkg = 'onnxruntime-node'): Promise<typeof Ort> {
  const ort = await importOptional<typeof Ort>(pkg);
  if (!ort) throw new InputError(`encoder.kind: onnx needs ${pkg}, an optional package that is not installed; install it with: ${ONNX_INSTALL}`);
  return ort;
}

interface Loaded {
  ort: typeof Ort;
  session: Ort.InferenceSession;
  tokenizer: Tokenizer;
  maxLen: number;
  padId: number;
  specialIds: Set<number>;
}

export class OnnxEncoder implements Encoder {
  readonly name: string;
  private loaded: Promise<Loaded> | null = null;
  private learnedDim = 0;

  constructor(
    readonly folder: string,
    private readonly batchSize = 64,
  ) {
    this.name = `onnx:${folder}`;
  }

  get dim(): number {
    return this.learnedDim;
  }

  /** Loads lazily (the factory is synchronous); errors name the file and the fix. */
  private load(): Promise<Loaded> {
    this.loaded ??= (async () => {
      const modelPath = join(this.folder, 'model.onnx');
      if (!existsSync(modelPath))
        throw new InputError(`${modelPath}: not found; encoder.path must be a folder with model.onnx and tokenizer.json (a sentence-transformers ONNX export)`);
      const tokenizerJSON = readJson(join(this.folder, 'tokenizer.json'), true) as Record<string, unknown>;
      const tokenizerConfig = readJson(join(this.folder, 'tokenizer_config.json'), false) ?? {};
      const stConfig = readJson(join(this.folder, 'sentence_bert_config.json'), false);
      const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
      const ort = await loadOnnxRuntime();
      let session: Ort.InferenceSession;
      try {
        session = await ort.InferenceSession.create(modelPath);
      } catch (e) {
        throw new InputError(`${modelPath}: onnxruntime cannot load it (${(e as Error).message}); export the model with optimum or sentence-transformers`);
      }
      for (const need of ['input_ids', 'attention_mask'])
        if (!session.inputNames.includes(need))
          throw new InputError(
            `${modelPath}: the model has inputs [${session.inputNames.join(', ')}] but no "${need}"; a sentence-transformers export takes input_ids and attention_mask`,
          );
      const cfgMax = Number(stConfig?.max_seq_length ?? tokenizerConfig.model_max_length ?? 512);
      return {
        ort,
        session,
        tokenizer,
        maxLen: Number.isFinite(cfgMax) && cfgMax > 0 ? Math.min(cfgMax, 8192) : 512,
        padId: tokenizer.pad_token_id ?? 0,
        specialIds: new Set(tokenizer.all_special_ids),
      };
    })();
    return this.loaded;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const m = await this.load();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) out.push(...(await this.embedBatch(m, texts.slice(i, i + this.batchSize))));
    return out;
  }

  private async embedBatch(m: Loaded, batch: string[]): Promise<Float32Array[]> {
    const ids = batch.map((t) => {
      const x = m.tokenizer.encode(t);
      return truncateIds(x, m.maxLen, m.specialIds.has(x[x.length - 1] as number));
    });
    const padded = padBatch(ids, m.padId);
    const B = batch.length;
    const T = padded.T;
    const int64 = (rows: number[][]) =>
      new m.ort.Tensor(
        'int64',
        BigInt64Array.from(rows.flat(), (x) => BigInt(x)),
        [B, T],
      );
    const feeds: Record<string, Ort.Tensor> = { input_ids: int64(padded.ids), attention_mask: int64(padded.mask) };
    if (m.session.inputNames.includes('token_type_ids')) feeds.token_type_ids = int64(padded.ids.map((r) => r.map(() => 0)));
    const result = await m.session.run(feeds);
    const name = TOKEN_OUTPUTS.find((n) => n in result) ?? m.session.outputNames[0];
    const t = result[name as string];
    if (!t || t.type !== 'float32')
      throw new InputError(`${this.folder}/model.onnx: output "${name}" is ${t?.type ?? 'missing'}; expected float32 token embeddings [B, T, D]`);
    const data = t.data as Float32Array;
    const dims = t.dims;
    let vecs: Float32Array[];
    if (dims.length === 3 && dims[0] === B && dims[1] === T) vecs = meanPoolNormalize(data, [B, T, dims[2] as number], padded.mask);
    else if (dims.length === 2 && dims[0] === B) vecs = splitNormalize(data, [B, dims[1] as number]);
    else
      throw new InputError(
        `${this.folder}/model.onnx: output "${name}" has shape [${dims.join(', ')}]; expected [${B}, ${T}, D] token embeddings or [${B}, D]`,
      );
    this.learnedDim = vecs[0]?.length ?? this.learnedDim;
    return vecs;
  }
}
