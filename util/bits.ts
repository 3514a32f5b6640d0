// Bitmasks as Int32Array words: bit (i & 31) of word (i >> 5) stands for index i (xgrammar's
// token bitmask layout; grammar masks in serve/structured and model/token-masks).

/** Whether bit i is set. */
export const hasBit = (mask: Int32Array, i: number): boolean => (((mask[i >>> 5] as number) >>> (i & 31)) & 1) === 1;

/** Set bits in a 32-bit word. */
export function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}
