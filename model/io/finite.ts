// Finite numbers or nothing (issue 32 item 5): an adapter, optimizer state or checkpoint
// holding a NaN or an infinity is never written, loaded, served or vouched for. These are
// the checks every reader and writer of weights calls, each naming the file, the tensor and
// the first bad position.
import { readSafetensors } from './safetensors.ts';
import { toFloat32, type SafeTensor } from './dtype.ts';

/** Index of the first NaN or infinity in `values`, or -1. */
export function firstNonFinite(values: ArrayLike<number>): number {
  for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i] as number)) return i;
  return -1;
}

/** "tensor X holds NaN at index i" for the first non-finite value of `t`, or null. */
export function nonFiniteTensor(name: string, t: SafeTensor, where: string): string | null {
  if (!['F32', 'F64', 'F16', 'BF16'].includes(t.dtype)) return null;
  const values = toFloat32(t, `${where}: ${name}`);
  const i = firstNonFinite(values);
  return i < 0 ? null : `tensor "${name}" holds ${values[i]} at index ${i}`;
}

/** The first non-finite tensor of a safetensors file, as a problem naming the file, or null. */
export function nonFiniteFile(file: string): string | null {
  let tensors: ReturnType<typeof readSafetensors>['tensors'];
  try {
    tensors = readSafetensors(file).tensors;
  } catch (e) {
    return `${file}: not a readable safetensors file (${(e as Error).message.split('\n')[0]})`;
  }
  for (const [name, t] of tensors) {
    const bad = nonFiniteTensor(name, t, file);
    if (bad) return `${file}: ${bad}`;
  }
  return null;
}
