// safetensors dtypes and their conversion to and from float32 (tfjs computes in fp32,
// method §9). Raw bytes are little-endian, as the format specifies.
import { InputError } from '../../util/errors.ts';

export const DTYPE_BYTES = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
} as const;

export type Dtype = keyof typeof DTYPE_BYTES;

export const isDtype = (s: unknown): s is Dtype => typeof s === 'string' && Object.hasOwn(DTYPE_BYTES, s);

/** One tensor as stored: dtype, shape and its raw little-endian bytes. */
export interface SafeTensor {
  dtype: Dtype;
  shape: number[];
  data: Uint8Array;
}

export const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** IEEE half -> float (subnormals, inf and NaN included). */
function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float -> IEEE half, round to nearest even (what numpy's astype(float16) does). */
function floatToHalf(x: number): number {
  f32[0] = x;
  const bits = u32[0] as number;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rem > mid || (rem === mid && half & 1) ? 1 : 0));
  }
  const half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  e = half + (rem > 0x1000 || (rem === 0x1000 && half & 1) ? 1 : 0); // a carry may round up to inf, correctly
  return sign | e;
}

/** float -> bfloat16 bits, round to nearest even (torch's conversion). */
function floatToBf16(x: number): number {
  f32[0] = x;
  const bits = u32[0] as number;
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff; // quiet NaN
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Decode a floating-point or integer tensor to float32 (I64 must fit in 2^53). */
export function toFloat32(t: SafeTensor, where: string): Float32Array {
  const n = numel(t.shape);
  const view = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out = new Float32Array(n);
  switch (t.dtype) {
    case 'F32':
      if (t.data.byteOffset % 4 === 0) out.set(new Float32Array(t.data.buffer, t.data.byteOffset, n));
      else for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
      return out;
    case 'F64':
      for (let i = 0; i < n; i++) out[i] = view.getFloat64(8 * i, true);
      return out;
    case 'BF16': {
      const o32 = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) o32[i] = view.getUint16(2 * i, true) << 16;
      return out;
    }
    case 'F16':
      for (let i = 0; i < n; i++) out[i] = halfToFloat(view.getUint16(2 * i, true));
      return out;
    case 'I64':
    case 'I32':
    case 'I16':
    case 'I8':
    case 'U8':
    case 'BOOL':
      return Float32Array.from(toNumbers(t, where));
  }
}

/** Decode an integer tensor to JS numbers; I64 values beyond 2^53 are refused. */
export function toNumbers(t: SafeTensor, where: string): number[] {
  if (t.dtype === 'F64' || t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16') return Array.from(toFloat32(t, where));
  const n = numel(t.shape);
  const view = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    switch (t.dtype) {
      case 'I64': {
        const v = view.getBigInt64(8 * i, true);
        if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER))
          throw new InputError(`${where}: I64 value ${v} at index ${i} does not fit a float64 exactly`);
        out[i] = Number(v);
        break;
      }
      case 'I32':
        out[i] = view.getInt32(4 * i, true);
        break;
      case 'I16':
        out[i] = view.getInt16(2 * i, true);
        break;
      case 'I8':
        out[i] = view.getInt8(i);
        break;
      case 'U8':
      case 'BOOL':
        out[i] = view.getUint8(i);
        break;
      default:
        throw new Error(`internal: ${t.dtype} is not an integer dtype`);
    }
  }
  return out;
}

/** Encode float32 values as F32, F16 or BF16 bytes. */
export function fromFloat32(values: Float32Array, shape: number[], dtype: 'F32' | 'F16' | 'BF16' = 'F32'): SafeTensor {
  if (values.length !== numel(shape)) throw new Error(`internal: ${values.length} values for shape [${shape}]`);
  if (dtype === 'F32') return { dtype, shape, data: new Uint8Array(values.slice().buffer) };
  const out = new Uint16Array(values.length);
  const conv = dtype === 'F16' ? floatToHalf : floatToBf16;
  for (let i = 0; i < values.length; i++) out[i] = conv(values[i] as number);
  return { dtype, shape, data: new Uint8Array(out.buffer) };
}

/** Encode integers as I32 or I64 bytes. */
export function fromInts(values: readonly number[], shape: number[], dtype: 'I32' | 'I64' = 'I64'): SafeTensor {
  const size = DTYPE_BYTES[dtype];
  const data = new Uint8Array(values.length * size);
  const view = new DataView(data.buffer);
  values.forEach((v, i) => (dtype === 'I64' ? view.setBigInt64(i * 8, BigInt(v), true) : view.setInt32(i * 4, v, true)));
  return { dtype, shape, data };
}
