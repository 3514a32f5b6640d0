// zstd for forward_backward bodies (the 0.25 SDK compresses them when the server's client
// config says proto_compress_fwdbwd, with Content-Encoding: zstd). Node 20's zlib has no zstd,
// so this is @bokuweb/zstd-wasm (MIT, the reference C library compiled to wasm; compress and
// decompress, no native build). Decompression is capped: a body that inflates beyond
// `maxBytes` is refused, never allocated in full.
import { compress, decompress, init } from '@bokuweb/zstd-wasm';
import { InputError } from '../../util/errors.ts';

let ready: Promise<void> | null = null;

/** Load the wasm module once (call before zstdCompress / zstdDecompress). */
export function zstdReady(): Promise<void> {
  return (ready ??= init());
}

/** The decompressed size a zstd frame header declares (Frame_Content_Size), or null when absent (RFC 8878 §3.1.1.1). */
export function declaredContentSize(frame: Uint8Array): number | null {
  if (frame.length < 6 || frame[0] !== 0x28 || frame[1] !== 0xb5 || frame[2] !== 0x2f || frame[3] !== 0xfd) return null;
  const fhd = frame[4] as number;
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  const dictFlag = fhd & 3;
  const at = 5 + (single ? 0 : 1) + [0, 1, 2, 4][dictFlag]!;
  const size = fcsFlag === 0 ? (single ? 1 : 0) : [1, 2, 4, 8][fcsFlag]!;
  if (size === 0 || frame.length < at + size) return null;
  let v = 0;
  for (let i = size - 1; i >= 0; i--) v = v * 256 + (frame[at + i] as number);
  return size === 2 ? v + 256 : v;
}

export function zstdDecompress(body: Uint8Array, maxBytes: number, field = 'body'): Uint8Array {
  const declared = declaredContentSize(body);
  if (declared === null)
    throw new InputError(`${field}: a zstd frame must declare its content size (Python's ZstdCompressor().compress does); send it uncompressed otherwise`);
  if (declared > maxBytes)
    throw new InputError(`${field}: the zstd frame inflates to ${declared} bytes, beyond this server's ${maxBytes}-byte cap; send fewer datums per request`);
  try {
    return decompress(body, { defaultHeapSize: declared });
  } catch (e) {
    throw new InputError(`${field}: not a valid zstd frame (${(e as Error).message})`);
  }
}

export function zstdCompress(body: Uint8Array, level = 3): Uint8Array {
  return compress(body, level);
}
