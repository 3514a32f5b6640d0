// Compact embedding storage: a Float32Array as base64 of its little-endian bytes
// (dim 768 -> 4 KiB of base64 instead of ~15 KiB of JSON numbers). Byte order is fixed
// explicitly so dumps move between machines; on little-endian hosts (x86, ARM) the bytes
// are copied as they are, elsewhere converted value by value.
import { endianness } from 'node:os';

const LE = endianness() === 'LE';

export function encodeEmbedding(v: Float32Array): string {
  if (LE) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  const buf = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => buf.writeFloatLE(x, i * 4));
  return buf.toString('base64');
}

export function decodeEmbedding(b64: string): Float32Array {
  const buf = Buffer.from(b64, 'base64');
  if (buf.length % 4 !== 0) throw new Error(`internal: embedding of ${buf.length} bytes is not a float32 array`);
  const out = new Float32Array(buf.length / 4);
  if (LE) new Uint8Array(out.buffer).set(buf);
  else for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}
