// `GET /metrics` of gsteer serve: Prometheus text from prom-client, on the server's own
// Registry (never the global one: several servers can run in one process, e.g. tests).
// Names follow vLLM's (`vllm:prompt_tokens_total`, `vllm:prefix_cache_queries_total`, ...)
// under the `gsteer_serve:` prefix; prefix-cache queries and hits count tokens, as vLLM V1.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PrefixCacheStats } from './prefix-cache.ts';

export interface ServeMetrics {
  readonly registry: Registry;
  /** A sequence's prompt is in its KV cache: `cached` of its `prompt` tokens came from the prefix cache. */
  prefilled(prompt: number, cached: number): void;
  /** One forward pass over `sequences` sequences and `tokens` new positions, taking `seconds`. */
  step(sequences: number, tokens: number, seconds: number): void;
  generated(tokens: number): void;
  /** One token sampled under a grammar: `seconds` of its mask and of the matcher's advance. */
  structured(seconds: number): void;
}

export interface MetricsSources {
  running(): number;
  waiting(): number;
  /** null when the prefix cache is off. */
  cache(): PrefixCacheStats | null;
}

export function serveMetrics(src: MetricsSources): ServeMetrics {
  const registry = new Registry();
  const counter = (name: string, help: string) => new Counter({ name: `gsteer_serve:${name}`, help, registers: [registry] });
  const prompt = counter('prompt_tokens_total', 'Prompt tokens of sequences whose prefill finished (one per choice).');
  const computed = counter('prompt_tokens_computed_total', 'Prompt tokens whose KV was computed (not taken from the prefix cache).');
  const queries = counter('prefix_cache_queries_total', 'Prefix cache queries, in prompt tokens looked up (0 while the cache is off).');
  const hits = counter('prefix_cache_hits_total', 'Prefix cache hits, in prompt tokens whose KV was reused.');
  const generation = counter('generation_tokens_total', 'Sampled tokens.');
  const passes = counter('forward_passes_total', 'Forward passes of the model.');
  const positions = counter('forward_tokens_total', 'Positions computed by forward passes (prompt and decode).');
  const forwardSeconds = counter('forward_seconds_total', 'Wall time of the forward passes.');
  const structuredTokens = counter(
    'structured_output_tokens_total',
    'Tokens sampled under a structured-output constraint (grammar, JSON schema, regex, choice).',
  );
  const structuredSeconds = counter(
    'structured_output_seconds_total',
    "Wall time of those tokens' constraint work: the next-token mask (xgrammar, the token filter, the allowed ids) and the matcher's advance.",
  );
  const batched = new Histogram({
    name: 'gsteer_serve:step_sequences',
    help: 'Sequences per forward pass (1 when not batched).',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  let lastEvictions = 0;
  new Counter({
    name: 'gsteer_serve:prefix_cache_evictions_total',
    help: 'Prefix cache blocks evicted to stay within --prefix-cache-mb.',
    registers: [registry],
    collect() {
      const n = src.cache()?.evictions ?? 0;
      this.inc(n - lastEvictions);
      lastEvictions = n;
    },
  });
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name: `gsteer_serve:${name}`,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  gauge('num_requests_running', 'Sequences holding a KV cache.', src.running);
  gauge('num_requests_waiting', 'Sequences waiting for a slot (--max-concurrency).', src.waiting);
  gauge('prefix_cache_blocks', 'Blocks in the prefix cache.', () => src.cache()?.blocks ?? 0);
  gauge('prefix_cache_usage_bytes', 'Bytes held by the prefix cache.', () => src.cache()?.bytes ?? 0);
  return {
    registry,
    prefilled(n, cached) {
      prompt.inc(n);
      computed.inc(n - cached);
      if (src.cache()) {
        queries.inc(n);
        hits.inc(cached);
      }
    },
    step(sequences, tokens, seconds) {
      passes.inc();
      positions.inc(tokens);
      forwardSeconds.inc(seconds);
      batched.observe(sequences);
    },
    generated: (n) => generation.inc(n),
    structured(seconds) {
      structuredTokens.inc();
      structuredSeconds.inc(seconds);
    },
  };
}
