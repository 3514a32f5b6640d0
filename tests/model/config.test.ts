// config.json parsing: Qwen3 keys, defaults, rope_parameters, and refusals by name.
import { describe, expect, it } from 'vitest';
import { parseQwen3Config } from '../../model/config.ts';

// The published Qwen/Qwen3-8B config.json (the keys that matter here).
const QWEN3_8B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 4096,
  intermediate_size: 12288,
  max_position_embeddings: 40960,
  model_type: 'qwen3',
  num_attention_heads: 32,
  num_hidden_layers: 36,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  vocab_size: 151936,
};

describe('parseQwen3Config', () => {
  it('reads Qwen3-8B', () => {
    expect(parseQwen3Config(QWEN3_8B, 'config.json')).toEqual({
      vocabSize: 151936,
      hiddenSize: 4096,
      intermediateSize: 12288,
      numHiddenLayers: 36,
      numAttentionHeads: 32,
      numKeyValueHeads: 8,
      headDim: 128,
      rmsNormEps: 1e-6,
      ropeTheta: 1000000,
      tieWordEmbeddings: false,
      maxPositionEmbeddings: 40960,
    });
  });

  it('takes rope_theta from rope_parameters (transformers >= 4.56) and head_dim defaults to hidden/heads', () => {
    const { rope_theta: _, head_dim: __, ...rest } = QWEN3_8B;
    const cfg = parseQwen3Config({ ...rest, rope_parameters: { rope_type: 'default', rope_theta: 5e5 } }, 'c.json');
    expect(cfg.ropeTheta).toBe(5e5);
    expect(cfg.headDim).toBe(128);
  });

  it('refuses other architectures by name', () => {
    expect(() => parseQwen3Config({ ...QWEN3_8B, architectures: ['LlamaForCausalLM'], model_type: 'llama' }, 'm/config.json')).toThrow(
      /m\/config\.json: architectures \["LlamaForCausalLM"\] is not supported[\s\S]*model_type "llama" is not supported/,
    );
    expect(() => parseQwen3Config({ ...QWEN3_8B, model_type: 'qwen2' }, 'c')).toThrow(/model_type "qwen2"/);
  });

  it('names bad fields with their values and the rule', () => {
    expect(() => parseQwen3Config({ ...QWEN3_8B, hidden_size: 0, num_key_value_heads: 5 }, 'c')).toThrow(/hidden_size = 0 must be a positive integer/);
    expect(() => parseQwen3Config({ ...QWEN3_8B, num_key_value_heads: 5 }, 'c')).toThrow(
      /num_attention_heads \(32\) must be a multiple of num_key_value_heads \(5\)/,
    );
    expect(() => parseQwen3Config({ ...QWEN3_8B, rope_scaling: { rope_type: 'yarn', factor: 4 } }, 'c')).toThrow(/rope_scaling .*yarn.* is not supported/);
  });
});
