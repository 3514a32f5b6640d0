// Test double for reward-math tests: a fixed unit vector per known text, so every cosine
// in those tests can be worked by hand. An unknown text is a test bug (it means the reward
// built a g_i / v_j / question text other than the one the test expects), so it throws.
import type { Encoder } from '../../core/encoder.ts';

export class TableEncoder implements Encoder {
  readonly name = 'table';
  readonly dim: number;
  readonly seen: string[] = [];
  constructor(private readonly table: Record<string, number[]>) {
    this.dim = Object.values(table)[0]?.length ?? 0;
  }
  async embed(texts: string[]): Promise<Float32Array[]> {
    this.seen.push(...texts);
    return texts.map((t) => {
      const v = this.table[t];
      if (!v) throw new Error(`TableEncoder: no vector for ${JSON.stringify(t)}`);
      return Float32Array.from(v);
    });
  }
}
