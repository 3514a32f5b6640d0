// Numbers <-> the raw little-endian bytes Tinker's protobuf bodies carry (token lists as int32,
// tensors in their dtype, indices and offsets as int64, bfloat16 as the upper 16 bits of a
// float32). Reads copy into an aligned buffer first: a protobuf bytes field is a view at any
// offset of the message, and typed arrays need their element alignment.
import { InputError } from '../../util/errors.ts';

function aligned(bytes: Uint8Array, size: number, field: string): ArrayBuffer {
  if (bytes.byteLength % size !== 0) throw new InputError(`${field}: ${bytes.byteLength} bytes is not a whole number of ${size}-byte values`);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy.buffer;
}

export const int32Bytes = (v: readonly number[]): Uint8Array => new Uint8Array(Int32Array.from(v).buffer);
export const float32Bytes = (v: readonly number[]): Uint8Array => new Uint8Array(Float32Array.from(v).buffer);
export const float64Bytes = (v: readonly number[]): Uint8Array => new Uint8Array(Float64Array.from(v).buffer);

export function int64Bytes(v: readonly number[]): Uint8Array {
  return new Uint8Array(BigInt64Array.from(v, (x) => BigInt(x)).buffer);
}

export const readInt32 = (b: Uint8Array, field: string): number[] => Array.from(new Int32Array(aligned(b, 4, field)));
export const readFloat32 = (b: Uint8Array, field: string): number[] => Array.from(new Float32Array(aligned(b, 4, field)));

export function readInt64(b: Uint8Array, field: string): number[] {
  return Array.from(new BigInt64Array(aligned(b, 8, field)), (x, i) => {
    if (x > BigInt(Number.MAX_SAFE_INTEGER) || x < BigInt(Number.MIN_SAFE_INTEGER))
      throw new InputError(`${field}[${i}] = ${x} is beyond 2^53; gsteer reads int64 tensors as exact JavaScript numbers`);
    return Number(x);
  });
}

/** bfloat16 -> float32: each value is the upper half of a float32's bits. */
export function readBfloat16(b: Uint8Array, field: string): number[] {
  const u16 = new Uint16Array(aligned(b, 2, field));
  const u32 = Uint32Array.from(u16, (x) => x << 16);
  return Array.from(new Float32Array(u32.buffer));
}
