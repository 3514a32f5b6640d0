// Bitmasks as Int32Array words: bit (i & 31) of word (i >> 5) stands for index i (xgrammar's
// token bitmask layout; grammar masks in structured/ and model/token-masks).

/** Whether bit i is set. */
export const hasBit = (mask: Int32Array, i: number): boolean => (((mask[i >>> 5] as number) >>> (i & 31)) & 1) === 1;

/** Set bits in a 32-bit word. */
export function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** The indices below `size` whose bit is set in `mask` (or, with `unset`, clear), ascending. */
export function bitIndices(mask: Int32Array, size: number, unset = false): Int32Array {
  const words = Math.ceil(size / 32);
  const set = countBits(mask, size);
  const out = new Int32Array(unset ? size - set : set);
  let n = 0;
  for (let w = 0; w < words; w++) {
    let word = w < mask.length ? (mask[w] as number) : 0;
    if (unset) word = ~word;
    while (word !== 0) {
      const i = (w << 5) | (31 - Math.clz32(word & -word)); // lowest set bit
      word &= word - 1;
      if (i < size) out[n++] = i;
    }
  }
  return out;
}

/** How many indices below `size` have their bit set in `mask`. */
export function countBits(mask: Int32Array, size: number): number {
  const words = Math.ceil(size / 32);
  let set = 0;
  for (let w = 0; w < Math.min(words, mask.length); w++) set += popcount(mask[w] as number);
  if (size % 32 && words <= mask.length) set -= popcount((mask[words - 1] as number) >>> (size % 32)); // bits past size
  return set;
}
