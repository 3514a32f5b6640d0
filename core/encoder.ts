// method §4/§9: the sentence encoder phi. Implementations: embedded hashed n-gram
// (encoders/hashed.ts), ONNX on disk (encoders/onnx.ts), OpenAI-compatible
// /v1/embeddings (encoders/http.ts). All return L2-normalized vectors.

export interface Encoder {
  readonly name: string;
  readonly dim: number;
  /** Batched: one unit vector per text, same order. */
  embed(texts: string[]): Promise<Float32Array[]>;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}
