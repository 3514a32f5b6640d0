// An event-file reader written apart from monitor/tensorboard.ts and monitor/tfrecord.ts: its
// own table-driven CRC32C (Castagnoli, reflected polynomial 0x82F63B78, RFC 3720 B.4), its own
// TFRecord framing checks and its own protobuf wire decoding (no protobufjs, no
// @aws-crypto), so a test that passes through it does not share code with the writer.
// Strict where the writer's reader is lenient: any bad CRC or truncated byte throws.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** TFRecord's mask: rotate right 15 bits, add 0xa282ead8, mod 2^32. */
export const mask = (crc: number) => ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) % 2 ** 32;

export interface TfEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  values: { tag: string; simpleValue?: number }[];
}

/** Protobuf fields of one message: [field number, wire type, payload]. */
function* fields(buf: Uint8Array): Generator<[number, number, bigint | Uint8Array]> {
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= buf.length) throw new Error(`truncated varint at byte ${i}`);
      const b = buf[i++] as number;
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  const take = (n: number) => {
    if (i + n > buf.length) throw new Error(`field runs past the message end (${i} + ${n} > ${buf.length})`);
    return buf.subarray(i, (i += n));
  };
  while (i < buf.length) {
    const key = varint();
    const [field, wire] = [Number(key >> 3n), Number(key & 7n)];
    if (wire === 0) yield [field, wire, varint()];
    else if (wire === 1) yield [field, wire, take(8)];
    else if (wire === 2) yield [field, wire, take(Number(varint()))];
    else if (wire === 5) yield [field, wire, take(4)];
    else throw new Error(`wire type ${wire} (field ${field}) is not used by Event`);
  }
}

const le = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const text = (b: Uint8Array) => new TextDecoder('utf-8', { fatal: true }).decode(b);

function decodeValue(buf: Uint8Array): { tag: string; simpleValue?: number } {
  const v: { tag: string; simpleValue?: number } = { tag: '' };
  for (const [f, w, p] of fields(buf)) {
    if (f === 1 && w === 2) v.tag = text(p as Uint8Array);
    if (f === 2 && w === 5) v.simpleValue = le(p as Uint8Array).getFloat32(0, true);
  }
  return v;
}

export function decodeEvent(buf: Uint8Array): TfEvent {
  const e: TfEvent = { wallTime: 0, step: 0, values: [] };
  for (const [f, w, p] of fields(buf)) {
    if (f === 1 && w === 1) e.wallTime = le(p as Uint8Array).getFloat64(0, true);
    else if (f === 2 && w === 0) e.step = Number(BigInt.asIntN(64, p as bigint));
    else if (f === 3 && w === 2) e.fileVersion = text(p as Uint8Array);
    else if (f === 5 && w === 2) for (const [sf, sw, sp] of fields(p as Uint8Array)) if (sf === 1 && sw === 2) e.values.push(decodeValue(sp as Uint8Array));
  }
  return e;
}

/** Every record of a TFRecord file, each length and payload CRC checked. */
export function readTfRecords(buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < buf.length) {
    if (i + 12 > buf.length) throw new Error(`truncated record header at byte ${i}`);
    const head = buf.subarray(i, i + 8);
    const len = Number(le(head).getBigUint64(0, true));
    if (le(buf.subarray(i + 8, i + 12)).getUint32(0, true) !== mask(crc32c(head))) throw new Error(`bad length CRC at byte ${i}`);
    if (i + 12 + len + 4 > buf.length) throw new Error(`truncated record at byte ${i} (length ${len})`);
    const data = buf.subarray(i + 12, i + 12 + len);
    if (le(buf.subarray(i + 12 + len, i + 16 + len)).getUint32(0, true) !== mask(crc32c(data))) throw new Error(`bad data CRC at byte ${i}`);
    out.push(data);
    i += 16 + len;
  }
  return out;
}

export const readEventFile = (buf: Uint8Array): TfEvent[] => readTfRecords(buf).map(decodeEvent);

/** tag -> [step, value] in file order, from the summary events (simple_value only). */
export function scalarSeries(events: readonly TfEvent[]): Map<string, [number, number][]> {
  const out = new Map<string, [number, number][]>();
  for (const e of events) {
    for (const v of e.values) {
      if (v.simpleValue === undefined) throw new Error(`step ${e.step} tag ${v.tag}: not a simple_value`);
      out.set(v.tag, [...(out.get(v.tag) ?? []), [e.step, v.simpleValue]]);
    }
  }
  return out;
}

/** What metrics.jsonl says TensorBoard must show: tag -> [step, float32 value] for every numeric key but `step`. */
export function seriesOfMetrics(records: readonly Record<string, unknown>[]): Map<string, [number, number][]> {
  const out = new Map<string, [number, number][]>();
  for (const r of records)
    for (const [k, v] of Object.entries(r)) if (k !== 'step' && typeof v === 'number') out.set(k, [...(out.get(k) ?? []), [r.step as number, Math.fround(v)]]);
  return out;
}

/** The one event file of a run directory, read (throws unless there is exactly one). */
export function readRunEvents(runDir: string): TfEvent[] {
  const names = readdirSync(runDir).filter((n) => n.includes('tfevents'));
  if (names.length !== 1 || !/^events\.out\.tfevents\.\d{10}\.\S+$/.test(names[0] as string))
    throw new Error(`${runDir}: expected one events.out.tfevents.<secs>.<host> file, found ${JSON.stringify(names)}`);
  return readEventFile(readFileSync(join(runDir, names[0] as string)));
}
