// Reading a /v1/embeddings response: one finite, non-empty vector per input, placed by its
// `index` (not array order), all of one size. Anything else is a refused reply (retried).
import { BadReply } from './errors.ts';

export function readEmbeddings(body: unknown, n: number): number[][] {
  const bad = (detail: string) => new BadReply('bad_embedding', detail, null);
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== n) throw bad(`sent ${n} texts, got ${Array.isArray(data) ? data.length : 'no'} embeddings`);
  const out = new Array<number[] | undefined>(n);
  for (const d of data as { index?: unknown; embedding?: unknown }[]) {
    const i = d?.index;
    if (typeof i !== 'number' || !Number.isInteger(i) || i < 0 || i >= n || out[i]) throw bad(`embedding index ${String(i)} is out of range or repeated`);
    const e = d.embedding;
    if (!Array.isArray(e) || e.length === 0 || !e.every((x) => typeof x === 'number' && Number.isFinite(x)))
      throw bad(`embedding ${i} is not a non-empty list of finite numbers`);
    if (out[0] && e.length !== out[0].length) throw bad(`embedding ${i} has ${e.length} dimensions, another has ${out[0].length}`);
    out[i] = e as number[];
  }
  const dims = new Set(out.map((v) => v?.length));
  if (dims.size !== 1) throw bad('embeddings differ in size');
  return out as number[][];
}
