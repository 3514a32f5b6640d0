// util/bits.ts against a bit-by-bit reference on random masks, sizes that end inside a word.
import { describe, expect, it } from 'vitest';
import { bitIndices, countBits, hasBit, popcount } from '../../util/bits.ts';
import { Rng } from '../../util/rng.ts';

describe('bitmask words', () => {
  const rng = new Rng(3);
  const masks = [0.02, 0.5, 0.97].map((p) => {
    const m = new Int32Array(40);
    for (let i = 0; i < 40 * 32; i++) if (rng.next() < p) m[i >> 5]! |= 1 << (i & 31);
    return m;
  });

  it('popcount counts the set bits of a word, sign bit included', () => {
    for (const w of [0, 1, -1, 0x80000000 | 0, 0x55555555, 12345678]) {
      let n = 0;
      for (let b = 0; b < 32; b++) n += (w >>> b) & 1;
      expect(popcount(w)).toBe(n);
    }
  });

  it('bitIndices and countBits list and count the set (or clear) bits below size', () => {
    for (const m of masks)
      for (const size of [1, 31, 32, 33, 700, 40 * 32, 40 * 32 + 50]) {
        const set: number[] = [];
        const clear: number[] = [];
        for (let i = 0; i < size; i++) (i < 40 * 32 && hasBit(m, i) ? set : clear).push(i);
        expect(Array.from(bitIndices(m, size))).toEqual(set);
        expect(Array.from(bitIndices(m, size, true))).toEqual(clear);
        expect(countBits(m, size)).toBe(set.length);
      }
  });
});
