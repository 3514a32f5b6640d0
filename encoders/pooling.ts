// Sentence-transformers pooling for the ONNX encoder (all-mpnet-base-v2 uses mean pooling
// followed by L2 normalization): the sentence vector is the mean of the token embeddings
// over the positions the attention mask keeps, then normalized to unit length.
import { l2NormalizeInPlace } from './normalize.ts';

/**
 * hidden: row-major [B, T, D] token embeddings; mask: [B][T] of 0/1.
 * Returns B unit vectors of length D. A row with an all-zero mask gives the zero vector.
 */
export function meanPoolNormalize(hidden: Float32Array, dims: readonly [number, number, number], mask: number[][]): Float32Array[] {
  const [B, T, D] = dims;
  if (hidden.length !== B * T * D) throw new Error(`internal: hidden has ${hidden.length} values, expected ${B}x${T}x${D}`);
  if (mask.length !== B) throw new Error(`internal: mask has ${mask.length} rows, expected ${B}`);
  const out: Float32Array[] = [];
  for (let b = 0; b < B; b++) {
    const row = mask[b] as number[];
    const v = new Float32Array(D);
    let kept = 0;
    for (let t = 0; t < T; t++) {
      const m = row[t] ?? 0;
      if (!m) continue;
      kept += m;
      const off = (b * T + t) * D;
      for (let d = 0; d < D; d++) v[d] = (v[d] as number) + m * (hidden[off + d] as number);
    }
    // sentence-transformers clamps the mask sum at 1e-9; with no kept token the sum is 0 anyway.
    if (kept > 0) for (let d = 0; d < D; d++) v[d] = (v[d] as number) / kept;
    out.push(l2NormalizeInPlace(v));
  }
  return out;
}

/** Already-pooled output [B, D] (e.g. a `sentence_embedding` head): split and normalize. */
export function splitNormalize(pooled: Float32Array, dims: readonly [number, number]): Float32Array[] {
  const [B, D] = dims;
  if (pooled.length !== B * D) throw new Error(`internal: pooled output has ${pooled.length} values, expected ${B}x${D}`);
  return Array.from({ length: B }, (_, b) => l2NormalizeInPlace(pooled.slice(b * D, (b + 1) * D)));
}

/** Right-pad token id lists to one length; returns ids and the matching 0/1 mask, both [B][T]. */
export function padBatch(ids: number[][], padId: number): { ids: number[][]; mask: number[][]; T: number } {
  const T = Math.max(1, ...ids.map((x) => x.length));
  return {
    ids: ids.map((x) => [...x, ...new Array<number>(T - x.length).fill(padId)]),
    mask: ids.map((x) => [...new Array<number>(x.length).fill(1), ...new Array<number>(T - x.length).fill(0)]),
    T,
  };
}

/**
 * Keep at most maxLen tokens. When the sequence ends in a special token ([SEP] / </s>,
 * added by the tokenizer's post-processor) it stays last, as HF truncation keeps it.
 */
export function truncateIds(ids: number[], maxLen: number, endsInSpecial: boolean): number[] {
  if (ids.length <= maxLen) return ids;
  if (!endsInSpecial || maxLen < 2) return ids.slice(0, maxLen);
  return [...ids.slice(0, maxLen - 1), ids[ids.length - 1] as number];
}
