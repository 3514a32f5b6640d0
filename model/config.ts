// Qwen3 model config from a Hugging Face config.json (method §9). Only Qwen3 is accepted:
// another architecture would load, run and silently produce garbage.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../util/errors.ts';

export interface Qwen3Config {
  /** Size of the token id space (config.json `vocab_size`); see vocab-map.ts for trimmed heads. */
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
}

const QWEN3_ARCH = 'Qwen3ForCausalLM';
const QWEN3_TYPE = 'qwen3';

/** Parse and validate a config.json object; `file` names it in errors. */
export function parseQwen3Config(raw: unknown, file: string): Qwen3Config {
  if (typeof raw !== 'object' || raw === null) throw new InputError(`${file}: expected a JSON object`);
  const c = raw as Record<string, unknown>;
  const problems: string[] = [];
  const archs = c.architectures;
  if (Array.isArray(archs) && archs.some((a) => a !== QWEN3_ARCH))
    problems.push(`${file}: architectures ${JSON.stringify(archs)} is not supported; gsteer's trainer implements ${QWEN3_ARCH} only (use a Qwen3 checkpoint)`);
  if (c.model_type !== QWEN3_TYPE)
    problems.push(`${file}: model_type ${JSON.stringify(c.model_type)} is not supported; expected "${QWEN3_TYPE}" (use a Qwen3 checkpoint)`);
  const int = (key: string, fallback?: number): number => {
    const v = c[key] ?? fallback;
    if (!Number.isInteger(v) || (v as number) <= 0) {
      problems.push(`${file}: ${key} = ${JSON.stringify(c[key])} must be a positive integer`);
      return 1;
    }
    return v as number;
  };
  const num = (key: string, v: unknown): number => {
    if (typeof v !== 'number' || !(v > 0)) {
      problems.push(`${file}: ${key} = ${JSON.stringify(v)} must be a positive number`);
      return 1;
    }
    return v;
  };
  const hiddenSize = int('hidden_size');
  const numAttentionHeads = int('num_attention_heads');
  const numKeyValueHeads = int('num_key_value_heads', numAttentionHeads);
  // Qwen3 sets head_dim explicitly (128 for every size), which is not hidden/heads in general.
  const headDim = int('head_dim', Math.floor(hiddenSize / numAttentionHeads));
  const ropeParams = c.rope_parameters as Record<string, unknown> | undefined;
  const cfg: Qwen3Config = {
    vocabSize: int('vocab_size'),
    hiddenSize,
    intermediateSize: int('intermediate_size'),
    numHiddenLayers: int('num_hidden_layers'),
    numAttentionHeads,
    numKeyValueHeads,
    headDim,
    rmsNormEps: num('rms_norm_eps', c.rms_norm_eps ?? 1e-6),
    // transformers >= 4.56 moves rope_theta into rope_parameters.
    ropeTheta: num('rope_theta', c.rope_theta ?? ropeParams?.rope_theta ?? 1_000_000),
    tieWordEmbeddings: c.tie_word_embeddings === true,
    maxPositionEmbeddings: int('max_position_embeddings', 40960),
  };
  if (numAttentionHeads % numKeyValueHeads !== 0)
    problems.push(
      `${file}: num_attention_heads (${numAttentionHeads}) must be a multiple of num_key_value_heads (${numKeyValueHeads}) for grouped-query attention`,
    );
  if (headDim % 2 !== 0) problems.push(`${file}: head_dim (${headDim}) must be even for rotary embeddings`);
  const scaling = (c.rope_scaling ?? ropeParams?.rope_type) as unknown;
  if (scaling && typeof scaling === 'object' && (scaling as Record<string, unknown>).rope_type !== 'default')
    problems.push(`${file}: rope_scaling ${JSON.stringify(scaling)} is not supported; remove it (gsteer implements the default rotary embedding)`);
  if (typeof scaling === 'string' && scaling !== 'default')
    problems.push(`${file}: rope_parameters.rope_type "${scaling}" is not supported; gsteer implements the default rotary embedding`);
  if (problems.length) throw new InputError(problems.join('\n'), problems);
  return cfg;
}

export function readQwen3Config(dir: string): Qwen3Config {
  const file = join(dir, 'config.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`${file}: cannot read a JSON config (${(e as Error).message}); a model folder needs the Hugging Face config.json`);
  }
  return parseQwen3Config(raw, file);
}

/** The config.json a Qwen3 checkpoint carries (for `gsteer model init`). */
export function toHfConfig(cfg: Qwen3Config, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: [QWEN3_ARCH],
    model_type: QWEN3_TYPE,
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numHiddenLayers,
    num_attention_heads: cfg.numAttentionHeads,
    num_key_value_heads: cfg.numKeyValueHeads,
    head_dim: cfg.headDim,
    hidden_act: 'silu',
    rms_norm_eps: cfg.rmsNormEps,
    rope_theta: cfg.ropeTheta,
    rope_scaling: null,
    attention_bias: false,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    max_position_embeddings: cfg.maxPositionEmbeddings,
    torch_dtype: 'float32',
    bos_token_id: 151643,
    eos_token_id: 151645,
    ...extra,
  };
}
