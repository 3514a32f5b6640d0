// TFRecord framing, the container of TensorBoard event files (tensorflow/core/lib/io/record_writer.cc):
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
// The mask keeps a CRC of bytes that themselves hold CRCs from being trivially checkable.
import { crc32c } from '@aws-crypto/crc32c';

const MASK_DELTA = 0xa282ead8;

/** Rotate right by 15, add the delta (mod 2^32): record_writer's MaskedCrc. */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data);
  return (((crc >>> 15) | (crc << 17)) + MASK_DELTA) >>> 0;
}

export function frameRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(8 + 4 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

/**
 * The records of a TFRecord file up to the first one that is torn (a crash mid-append) or
 * fails its CRC; `validBytes` is where that happened (the file's length when all are whole).
 */
export function readRecords(buf: Uint8Array): { records: Uint8Array[]; validBytes: number } {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: Uint8Array[] = [];
  let off = 0;
  while (off + 12 <= b.length) {
    const len = b.readBigUInt64LE(off);
    if (b.readUInt32LE(off + 8) !== maskedCrc32c(b.subarray(off, off + 8))) break;
    const end = off + 12 + Number(len) + 4;
    if (len > BigInt(b.length) || end > b.length) break;
    const data = b.subarray(off + 12, end - 4);
    if (b.readUInt32LE(end - 4) !== maskedCrc32c(data)) break;
    records.push(data);
    off = end;
  }
  return { records, validBytes: off };
}
