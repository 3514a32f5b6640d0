import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { decodeEmbedding, encodeEmbedding } from '../../rollout/embedding-codec.ts';

describe('embedding codec', () => {
  it('round-trips float32 arrays bit for bit (also subarray views)', () => {
    fc.assert(
      fc.property(fc.float32Array({ maxLength: 64, noDefaultInfinity: true }), fc.nat(3), (v, off) => {
        const padded = new Float32Array(v.length + off + 1);
        padded.set(v, off);
        const view = padded.subarray(off, off + v.length);
        expect(Array.from(decodeEmbedding(encodeEmbedding(view)))).toEqual(Array.from(v));
      }),
    );
  });
  it('is little-endian float32, worked by hand: 1.0 = 00 00 80 3f, -2.0 = 00 00 00 c0', () => {
    expect(encodeEmbedding(Float32Array.from([1, -2]))).toBe(Buffer.from([0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]).toString('base64'));
  });
});
