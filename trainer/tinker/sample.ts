// A sampling result, wire-neutral (the SDK's SampleResponse, types/sample_response.py): per
// sequence its token ids, their logprobs and why it stopped; optional prompt logprobs (null at
// positions without one, e.g. the first token). Protobuf in proto-codec.ts; JSON below.

export type StopReason = 'stop' | 'length';

export interface SampledSequence {
  tokens: number[];
  /** log p(token) under the sampler's model, one per token (gsteer: raw, temperature 1). */
  logprobs: number[];
  stopReason: StopReason;
}

export interface SampleResult {
  sequences: SampledSequence[];
  promptLogprobs: (number | null)[] | null;
  promptCacheHitTokens: number;
}

export function sampleResultToJson(r: SampleResult): Record<string, unknown> {
  return {
    type: 'sample',
    sequences: r.sequences.map((s) => ({ tokens: s.tokens, logprobs: s.logprobs, stop_reason: s.stopReason })),
    prompt_logprobs: r.promptLogprobs,
    prompt_cache_hit_tokens: r.promptCacheHitTokens,
  };
}
