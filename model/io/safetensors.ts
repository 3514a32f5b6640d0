// safetensors read/write (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header `{name: {dtype, shape, data_offsets: [begin, end]},
// "__metadata__": {str: str}}` padded with spaces to a multiple of 8 (as HF writes it), then
// the tensor bytes; offsets are relative to the end of the header. Reads are per tensor at
// their offsets (real shards are several GB, beyond what one Node Buffer holds).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.ts';
import { InputError } from '../../util/errors.ts';
import { DTYPE_BYTES, isDtype, numel, type Dtype, type SafeTensor } from './dtype.ts';

export interface TensorInfo {
  dtype: Dtype;
  shape: number[];
  /** [begin, end) relative to the start of the data section. */
  offsets: [number, number];
}

export interface SafetensorsFile {
  readonly file: string;
  readonly metadata: Record<string, string>;
  /** Tensor names in header order. */
  readonly names: string[];
  info(name: string): TensorInfo;
  read(name: string): SafeTensor;
  close(): void;
}

const MAX_HEADER = 100_000_000; // the Rust reference refuses headers above 100 MB

function readExactly(fd: number, length: number, position: number): Uint8Array {
  const buf = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  if (done !== length) throw new Error(`short read: ${done} of ${length} bytes at ${position}`);
  return buf;
}

/** Validate a parsed header against the data section size; every fault names file and tensor. */
export function validateHeader(file: string, header: unknown, dataBytes: number): { infos: Map<string, TensorInfo>; metadata: Record<string, string> } {
  const fail = (msg: string): never => {
    throw new InputError(`${file}: ${msg}`);
  };
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return fail('header is not a JSON object; this is not a safetensors file');
  const infos = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof raw !== 'object' || raw === null || Object.values(raw).some((v) => typeof v !== 'string'))
        fail('__metadata__ must be an object of string values');
      metadata = raw as Record<string, string>;
      continue;
    }
    const t = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (!isDtype(t?.dtype)) fail(`tensor "${name}": unknown dtype ${JSON.stringify(t?.dtype)}; expected one of ${Object.keys(DTYPE_BYTES).join(', ')}`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isInteger(d) && d >= 0))
      fail(`tensor "${name}": shape ${JSON.stringify(t.shape)} must be a list of non-negative integers`);
    const off = t.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((o) => Number.isInteger(o) && o >= 0) || off[0] > off[1])
      fail(`tensor "${name}": data_offsets ${JSON.stringify(off)} must be [begin, end] with 0 <= begin <= end`);
    const [begin, end] = off as [number, number];
    if (end > dataBytes)
      fail(`tensor "${name}": data_offsets [${begin}, ${end}] run past the data section (${dataBytes} bytes); the file is truncated or the header is wrong`);
    const dtype = t.dtype as Dtype;
    const shape = t.shape as number[];
    const want = numel(shape) * DTYPE_BYTES[dtype];
    if (end - begin !== want) fail(`tensor "${name}": ${dtype}[${shape}] needs ${want} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}`);
    infos.set(name, { dtype, shape, offsets: [begin, end] });
  }
  // Tensors must tile the data section exactly: no overlap, no hole (as the Rust reference checks).
  const sorted = [...infos.entries()].sort((a, b) => a[1].offsets[0] - b[1].offsets[0] || a[1].offsets[1] - b[1].offsets[1]);
  let cursor = 0;
  let prev = '';
  for (const [name, info] of sorted) {
    const [begin] = info.offsets;
    if (begin < cursor) fail(`tensors "${prev}" and "${name}" overlap (${name} starts at ${begin}, before ${prev} ends at ${cursor})`);
    if (begin > cursor) fail(`tensor "${name}" starts at ${begin} but the previous tensor ends at ${cursor}; the data section has a hole`);
    cursor = info.offsets[1];
    prev = name;
  }
  if (cursor !== dataBytes) fail(`tensors cover ${cursor} bytes but the data section has ${dataBytes}; the file has trailing bytes or the header is wrong`);
  return { infos, metadata };
}

export function openSafetensors(file: string): SafetensorsFile {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    throw new InputError(`${file}: cannot open (${(e as Error).message}); check the path`);
  }
  try {
    const size = fstatSync(fd).size;
    if (size < 8) throw new InputError(`${file}: ${size} bytes is too short for a safetensors file (truncated?)`);
    const n = Number(new DataView(readExactly(fd, 8, 0).buffer).getBigUint64(0, true));
    if (n > MAX_HEADER) throw new InputError(`${file}: header length ${n} exceeds ${MAX_HEADER} bytes; this is not a safetensors file`);
    if (8 + n > size) throw new InputError(`${file}: header length ${n} runs past the end of the file (${size} bytes); the file is truncated`);
    let header: unknown;
    try {
      header = JSON.parse(new TextDecoder().decode(readExactly(fd, n, 8)));
    } catch (e) {
      throw new InputError(`${file}: header is not valid JSON (${(e as Error).message}); the file is corrupt`);
    }
    const { infos, metadata } = validateHeader(file, header, size - 8 - n);
    const dataStart = 8 + n;
    return {
      file,
      metadata,
      names: [...infos.keys()],
      info(name) {
        const info = infos.get(name);
        if (!info) throw new InputError(`${file}: no tensor named "${name}"`);
        return info;
      },
      read(name) {
        const { dtype, shape, offsets } = this.info(name);
        return { dtype, shape: [...shape], data: readExactly(fd, offsets[1] - offsets[0], dataStart + offsets[0]) };
      },
      close: () => closeSync(fd),
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Read every tensor of a file into memory. */
export function readSafetensors(file: string): { tensors: Map<string, SafeTensor>; metadata: Record<string, string> } {
  const f = openSafetensors(file);
  try {
    return { tensors: new Map(f.names.map((n) => [n, f.read(n)])), metadata: f.metadata };
  } finally {
    f.close();
  }
}

/** Serialize tensors in the given order; the header is space-padded to a multiple of 8. */
export function serializeSafetensors(tensors: ReadonlyMap<string, SafeTensor> | Record<string, SafeTensor>, metadata?: Record<string, string>): Uint8Array {
  const entries: [string, SafeTensor][] =
    tensors instanceof Map ? [...(tensors as ReadonlyMap<string, SafeTensor>).entries()] : Object.entries(tensors as Record<string, SafeTensor>);
  // Null prototype: a tensor named "__proto__" must become a key, not the prototype.
  const header: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let offset = 0;
  for (const [name, t] of entries) {
    const want = numel(t.shape) * DTYPE_BYTES[t.dtype];
    if (t.data.byteLength !== want) throw new Error(`internal: tensor "${name}" ${t.dtype}[${t.shape}] has ${t.data.byteLength} bytes, expected ${want}`);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + want] };
    offset += want;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let pos = 8 + head.length;
  for (const [, t] of entries) {
    out.set(t.data, pos);
    pos += t.data.byteLength;
  }
  return out;
}

/** Write atomically and durably (util/atomic.ts) so a crash never leaves half a checkpoint. */
export function writeSafetensors(
  file: string,
  tensors: ReadonlyMap<string, SafeTensor> | Record<string, SafeTensor>,
  metadata?: Record<string, string>,
): Uint8Array {
  const bytes = serializeSafetensors(tensors, metadata);
  writeFileAtomic(file, bytes);
  return bytes;
}
