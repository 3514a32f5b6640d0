// The encoder factory (method §9): one config section, three implementations behind one
// interface, wrapped in an LRU cache (encoder.cacheSize; 0 = off).
import type { RunConfig } from '../configs/schema.ts';
import type { Encoder } from '../core/encoder.ts';
import type { CallSink } from '../endpoints/index.ts';
import { InputError } from '../util/errors.ts';
import { CachedEncoder } from './cache.ts';
import { HashedEncoder } from './hashed.ts';
import { HttpEncoder } from './http.ts';
import { OnnxEncoder } from './onnx.ts';

export type EncoderConfig = RunConfig['encoder'];

function build(cfg: EncoderConfig, sink?: CallSink): Encoder {
  switch (cfg.kind) {
    case 'embedded':
      return new HashedEncoder(cfg.dim);
    case 'onnx':
      if (!cfg.path) throw new InputError('encoder.kind is "onnx" but encoder.path is not set; point it at a folder with model.onnx and tokenizer.json');
      return new OnnxEncoder(cfg.path, cfg.batchSize);
    case 'http':
      if (!cfg.baseUrl) throw new InputError('encoder.kind is "http" but encoder.baseUrl is not set; set it to an OpenAI-compatible /v1 URL');
      return new HttpEncoder({
        baseUrl: cfg.baseUrl,
        model: cfg.model,
        apiKeyEnv: cfg.apiKeyEnv,
        batchSize: cfg.batchSize,
        timeoutMs: cfg.timeoutMs,
        maxRetries: cfg.maxRetries,
        concurrency: cfg.concurrency,
        ...(sink ? { sink } : {}),
      });
  }
}

/** `sink`: where an http encoder's call records go (the run's llm_calls.jsonl). */
export function createEncoder(cfg: EncoderConfig, sink?: CallSink): Encoder {
  const enc = build(cfg, sink);
  return cfg.cacheSize > 0 ? new CachedEncoder(enc, cfg.cacheSize) : enc;
}

export { HashedEncoder, HttpEncoder, OnnxEncoder, CachedEncoder };
