// The embedded sentence encoder (method §9): a deterministic hashed n-gram embedding.
//
// Features of the lowercased text: word unigrams, word bigrams and character trigrams of
// each word with boundary marks ("#cat#" -> "#ca", "cat", "at#"). Each feature is hashed
// with 32-bit FNV-1a into one of `dim` buckets, with a sign taken from an independent bit of
// the hash (the "hashing trick" with signed buckets, so collisions cancel in expectation
// instead of piling up). Feature counts get sublinear weight 1 + ln(tf); the vector is
// L2-normalized, so dot products are cosines.
//
// Why this is a fair stand-in for all-mpnet-base-v2 in tests and the demo: the demo's slots,
// targets, seed questions and simulator answers are all grounded in the same seed texts, so
// semantic overlap there shows up as lexical overlap. Character trigrams make it robust to
// inflection ("budget"/"budgets", "travel"/"travelling"); bigrams reward shared phrases.
// It does not know synonyms — a real run uses the ONNX or HTTP encoder for that.
import type { Encoder } from '../core/encoder.ts';
import { l2NormalizeInPlace } from './normalize.ts';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/** 32-bit FNV-1a over the UTF-8 bytes of `s`. */
export function fnv1a(s: string): number {
  let h = FNV_OFFSET;
  for (const byte of utf8.encode(s)) h = Math.imul(h ^ byte, FNV_PRIME) >>> 0;
  return h >>> 0;
}

/** Lowercased words: runs of letters/digits (any script), apostrophes inside words kept. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu) ?? [];
}

/** The feature multiset of one text; prefixes keep the three kinds in separate namespaces. */
export function features(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (f: string) => counts.set(f, (counts.get(f) ?? 0) + 1);
  const ws = words(text);
  ws.forEach((w, i) => {
    add(`w:${w}`);
    if (i > 0) add(`b:${ws[i - 1]} ${w}`);
    const padded = [...`#${w}#`]; // code points, so non-BMP characters stay whole
    for (let k = 0; k + 3 <= padded.length; k++) add(`c:${padded.slice(k, k + 3).join('')}`);
  });
  return counts;
}

export function hashedEmbedding(text: string, dim: number): Float32Array {
  const v = new Float32Array(dim);
  for (const [f, tf] of features(text)) {
    const h = fnv1a(f);
    const bucket = (h >>> 1) % dim; // bits 1..31 pick the bucket
    const sign = h & 1 ? -1 : 1; // bit 0 picks the sign
    v[bucket] = (v[bucket] as number) + sign * (1 + Math.log(tf));
  }
  return l2NormalizeInPlace(v);
}

export class HashedEncoder implements Encoder {
  readonly name: string;
  constructor(readonly dim: number = 512) {
    if (!Number.isInteger(dim) || dim <= 0) throw new Error(`internal: hashed encoder dim must be a positive integer, got ${dim}`);
    this.name = `hashed-ngram-${dim}`;
  }
  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => hashedEmbedding(t, this.dim));
  }
}
