// safetensors: bit-exact round trips for every dtype, HF's header layout, float16/bfloat16
// conversion (bit patterns worked by hand below), every header fault as an InputError that
// names the file and tensor, and sharded checkpoints.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointReader } from '../../../model/io/checkpoint-files.ts';
import { DTYPE_BYTES, fromFloat32, fromInts, toFloat32, toNumbers, type Dtype, type SafeTensor } from '../../../model/io/dtype.ts';
import { openSafetensors, readSafetensors, serializeSafetensors, writeSafetensors } from '../../../model/io/safetensors.ts';
import { InputError } from '../../../util/errors.ts';

let tmp: string;
beforeAll(() => void (tmp = mkdtempSync(join(tmpdir(), 'gsteer-st-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A file from a raw header object and data bytes (for fault injection). */
function rawFile(name: string, header: unknown, data: Uint8Array, lengthOverride?: number): string {
  const h = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(lengthOverride ?? h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  const file = join(tmp, name);
  writeFileSync(file, out);
  return file;
}

function faultOf(file: string): string {
  try {
    openSafetensors(file).close();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  return 'no error';
}

describe('safetensors round trip', () => {
  const dtypes = Object.keys(DTYPE_BYTES) as Dtype[];
  const tensorArb = fc
    .record({ dtype: fc.constantFrom(...dtypes), shape: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }) })
    .chain(({ dtype, shape }) =>
      fc
        .uint8Array({ minLength: shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype], maxLength: shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype] })
        .map((data): SafeTensor => ({ dtype, shape, data })),
    );

  it('writes and reads back every dtype bit-exactly, in order, with metadata (property)', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s !== '__metadata__'),
          tensorArb,
          { maxKeys: 6 },
        ),
        fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
        (tensors, metadata) => {
          const file = join(tmp, 'prop.safetensors');
          const bytes = writeSafetensors(file, tensors, metadata);
          const back = readSafetensors(file);
          expect([...back.tensors.keys()]).toEqual(Object.keys(tensors));
          for (const [name, t] of Object.entries(tensors)) {
            const got = back.tensors.get(name)!;
            expect(got.dtype).toBe(t.dtype);
            expect(got.shape).toEqual(t.shape);
            expect(Buffer.from(got.data).equals(Buffer.from(t.data))).toBe(true);
          }
          expect(back.metadata).toEqual(Object.keys(metadata).length ? metadata : {});
          // re-serializing what we read gives the same bytes
          expect(Buffer.from(serializeSafetensors(back.tensors, back.metadata)).equals(Buffer.from(bytes))).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('pads the JSON header with spaces to a multiple of 8 bytes, offsets relative to its end', () => {
    const bytes = serializeSafetensors({ a: fromFloat32(new Float32Array([1, 2, 3]), [3]) }, { format: 'pt' });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const header = new TextDecoder().decode(bytes.slice(8, 8 + n));
    expect(header).toMatch(/^\{.*\} *$/);
    expect(JSON.parse(header)).toEqual({ __metadata__: { format: 'pt' }, a: { dtype: 'F32', shape: [3], data_offsets: [0, 12] } });
    expect(Array.from(new Float32Array(bytes.slice(8 + n).buffer))).toEqual([1, 2, 3]);
  });
});

describe('dtype conversion', () => {
  it('float16 bits (worked by hand): 1 = 0x3C00, -2 = 0xC000, 65504 = 0x7BFF, 2^-24 = 0x0001, ties to even', () => {
    const enc = (x: number) => new Uint16Array(fromFloat32(new Float32Array([x]), [1], 'F16').data.buffer)[0];
    expect(enc(1)).toBe(0x3c00);
    expect(enc(-2)).toBe(0xc000);
    expect(enc(65504)).toBe(0x7bff);
    expect(enc(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(enc(1 + 2 ** -11)).toBe(0x3c00); // halfway between 1 and 1+2^-10: round to even (1)
    expect(enc(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway between 1+2^-10 and 1+2^-9: to even (1+2^-9)
    expect(enc(1e6)).toBe(0x7c00); // overflow -> inf
    const dec = (bits: number) => toFloat32({ dtype: 'F16', shape: [1], data: new Uint8Array(new Uint16Array([bits]).buffer) }, 't')[0];
    expect(dec(0x3555)).toBeCloseTo(0.333251953125, 12); // exponent 13 -> 2^-2, mantissa 0x155 = 341: (1 + 341/1024) / 4 = 1365/4096
    expect(dec(0x0001)).toBe(2 ** -24);
    expect(dec(0xfc00)).toBe(-Infinity);
  });

  it('bfloat16 bits: 1 = 0x3F80, 1/3 rounds to 0x3EAB, decode is exact', () => {
    const enc = (x: number) => new Uint16Array(fromFloat32(new Float32Array([x]), [1], 'BF16').data.buffer)[0];
    expect(enc(1)).toBe(0x3f80);
    expect(enc(1 / 3)).toBe(0x3eab); // f32 1/3 = 0x3EAAAAAB: upper half 0x3EAA, remainder 0xAAAB > 0x8000 -> up
    expect(enc(-0.5)).toBe(0xbf00);
    const t = fromFloat32(new Float32Array([1, 1 / 3, -0.5, 3.140625]), [4], 'BF16');
    expect(Array.from(toFloat32(t, 't'))).toEqual([1, 0.333984375, -0.5, 3.140625]);
  });

  it('integers: I64 and I32 round-trip; I64 beyond 2^53 is refused', () => {
    expect(toNumbers(fromInts([0, -1, 2 ** 40, 7], [4], 'I64'), 't')).toEqual([0, -1, 2 ** 40, 7]);
    expect(toNumbers(fromInts([-5, 123456], [2], 'I32'), 't')).toEqual([-5, 123456]);
    const big: SafeTensor = { dtype: 'I64', shape: [1], data: new Uint8Array(new BigInt64Array([2n ** 60n]).buffer) };
    expect(() => toNumbers(big, 'f.safetensors: ids')).toThrow(/f\.safetensors: ids: I64 value 1152921504606846976/);
  });
});

describe('header faults are InputErrors naming the file and tensor', () => {
  const four = new Uint8Array(16);
  const ok = { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } };

  it('a well-formed file opens', () => {
    expect(faultOf(rawFile('ok.safetensors', ok, four))).toBe('no error');
  });
  it('truncated data', () => {
    const file = rawFile('trunc.safetensors', ok, four.slice(0, 12));
    expect(faultOf(file)).toMatch(new RegExp(`${file}: tensor "b": data_offsets \\[8, 16\\] run past the data section \\(12 bytes\\)`));
  });
  it('header length past the end of the file, and files shorter than 8 bytes', () => {
    const file = rawFile('hlen.safetensors', ok, four, 10_000);
    expect(faultOf(file)).toMatch(/hlen\.safetensors: header length 10000 runs past the end of the file/);
    writeFileSync(join(tmp, 'short.safetensors'), new Uint8Array(5));
    expect(faultOf(join(tmp, 'short.safetensors'))).toMatch(/short\.safetensors: 5 bytes is too short/);
  });
  it('overlapping tensors', () => {
    const file = rawFile(
      'overlap.safetensors',
      {
        a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
        b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
        c: { dtype: 'F32', shape: [1], data_offsets: [12, 16] },
      },
      four,
    );
    expect(faultOf(file)).toMatch(/overlap\.safetensors: tensors "a" and "b" overlap/);
  });
  it('a hole between tensors, trailing bytes', () => {
    expect(
      faultOf(
        rawFile('hole.safetensors', { a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, b: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } }, four),
      ),
    ).toMatch(/tensor "b" starts at 8 but the previous tensor ends at 4/);
    expect(faultOf(rawFile('trail.safetensors', { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, four))).toMatch(
      /tensors cover 8 bytes but the data section has 16/,
    );
  });
  it('unknown dtype, byte count that does not fit the shape, bad offsets, bad JSON', () => {
    expect(faultOf(rawFile('dtype.safetensors', { ...ok, a: { dtype: 'F8_E4M3', shape: [8], data_offsets: [0, 8] } }, four))).toMatch(
      /dtype\.safetensors: tensor "a": unknown dtype "F8_E4M3"/,
    );
    expect(faultOf(rawFile('count.safetensors', { ...ok, a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, four))).toMatch(
      /tensor "a": F32\[3\] needs 12 bytes but data_offsets \[0, 8\] hold 8/,
    );
    expect(faultOf(rawFile('offs.safetensors', { ...ok, a: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, four))).toMatch(
      /tensor "a": data_offsets \[8,0\] must be \[begin, end\]/,
    );
    const file = join(tmp, 'json.safetensors');
    const h = new TextEncoder().encode('{"a": ');
    const bytes = new Uint8Array(8 + h.length);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(h.length), true);
    bytes.set(h, 8);
    writeFileSync(file, bytes);
    expect(faultOf(file)).toMatch(/json\.safetensors: header is not valid JSON/);
  });
});

describe('sharded checkpoints', () => {
  const GQA = join(import.meta.dirname, '../../reference/fixtures/gqa');
  it('reads tensors from both shards through model.safetensors.index.json', () => {
    const r = new CheckpointReader(GQA);
    const index = JSON.parse(readFileSync(join(GQA, 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
    expect(new Set(Object.values(index.weight_map)).size).toBe(2);
    for (const name of ['model.embed_tokens.weight', 'lm_head.weight', 'model.layers.1.mlp.down_proj.weight']) {
      expect(r.files.get(name)).toBe(join(GQA, index.weight_map[name]!));
      expect(r.read(name).data.byteLength).toBeGreaterThan(0);
    }
    r.close();
  });
  it('an index that points at a shard lacking the tensor is refused', () => {
    const dir = mkdtempSync(join(tmp, 'shard-'));
    writeSafetensors(join(dir, 's1.safetensors'), { x: fromFloat32(new Float32Array([1]), [1]) });
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { x: 's1.safetensors', y: 's1.safetensors' } }));
    const r = new CheckpointReader(dir);
    expect(r.read('x').shape).toEqual([1]);
    expect(() => r.read('y')).toThrow(/s1\.safetensors: the index names tensor "y" in this shard but the shard does not contain it/);
    r.close();
  });
});
