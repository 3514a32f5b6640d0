// When a switchable behaviour of the fake vLLM server fires. Deterministic: `on` lists request
// numbers; `rate` draws per request from sha256(seed | behaviour | request body | k), k = how
// many identical bodies came before, so the same seed gives the same faults to the same
// requests whatever order concurrent clients send them in, and a retried request (same body,
// next k) gets a fresh draw.
import { createHash } from 'node:crypto';

export interface Fault {
  /** Fraction of requests, 0..1, drawn as above. */
  rate?: number;
  /** 0-based request numbers (every POST to chat/completions and embeddings counts, in arrival order). */
  on?: number[];
}

/** A uniform number in [0, 1) from the first 48 bits of a sha256. */
export function uniform(...parts: (string | number)[]): number {
  const h = createHash('sha256').update(parts.join('|')).digest();
  return h.readUIntBE(0, 6) / 2 ** 48;
}

export function fires(f: Fault | undefined, name: string, seed: number, n: number, bodyKey: string, k: number): boolean {
  if (!f) return false;
  if (f.on?.includes(n)) return true;
  return (f.rate ?? 0) > 0 && uniform(seed, name, bodyKey, k) < (f.rate ?? 0);
}
