// L2 normalization shared by every encoder: method §4 defines phi as L2-normalized, so the
// dot product of two embeddings is their cosine. A zero vector (no features, e.g. an empty
// text) stays zero: it has no direction, and a cosine of 0 to everything is the honest answer.

/** Normalize in place and return the same array. */
export function l2NormalizeInPlace(v: Float32Array): Float32Array {
  let ss = 0;
  for (let i = 0; i < v.length; i++) ss += (v[i] as number) * (v[i] as number);
  if (ss === 0) return v;
  const inv = 1 / Math.sqrt(ss);
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * inv;
  return v;
}

export function l2Norm(v: Float32Array): number {
  let ss = 0;
  for (let i = 0; i < v.length; i++) ss += (v[i] as number) * (v[i] as number);
  return Math.sqrt(ss);
}
