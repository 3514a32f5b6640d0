// A bounded LRU cache in front of any Encoder, keyed by the exact text. Targets, seed
// questions and common slot names repeat across the G trajectories of a group and across
// groups of the same instance, so most reward calls hit the cache. The embeddings are
// deterministic for a given encoder, so caching changes no result. Returned vectors are
// shared with the cache: callers treat them as read-only (as every reward path does).
import type { Encoder } from '../core/encoder.ts';

export class CachedEncoder implements Encoder {
  readonly name: string;
  private readonly cache = new Map<string, Float32Array>(); // insertion order = recency
  hits = 0;
  misses = 0;

  constructor(
    private readonly inner: Encoder,
    readonly maxEntries = 10_000,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries <= 0) throw new Error(`internal: cache size must be a positive integer, got ${maxEntries}`);
    this.name = inner.name;
  }

  /** Delegated: the http and onnx encoders learn their size on the first call. */
  get dim(): number {
    return this.inner.dim;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.cache.has(t)))];
    const fresh = missing.length ? await this.inner.embed(missing) : [];
    const out = new Map<string, Float32Array>();
    missing.forEach((t, i) => out.set(t, fresh[i] as Float32Array));
    const result = texts.map((t) => {
      const hit = this.cache.get(t);
      if (hit) {
        this.hits++;
        this.cache.delete(t); // refresh recency
        this.cache.set(t, hit);
        return hit;
      }
      this.misses++;
      return out.get(t) as Float32Array;
    });
    for (const [t, v] of out) this.remember(t, v);
    return result;
  }

  private remember(text: string, v: Float32Array): void {
    this.cache.delete(text);
    this.cache.set(text, v);
    while (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value as string);
  }

  get size(): number {
    return this.cache.size;
  }
}
