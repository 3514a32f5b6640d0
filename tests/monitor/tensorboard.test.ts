// TensorBoard event files: checked with the independent reader (tfevents-reader.ts, no code
// shared with the writer), against a golden file worked by hand, and against metrics.jsonl
// through the real sink, including the resume path (truncate + re-run, as restore.ts does).
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { metricsSink, readMetrics, type MetricsRecord } from '../../monitor/sink.ts';
import { truncateLines } from '../../util/jsonl.ts';
import { FILE_VERSION, openEventWriter, scalarEvent, versionEvent } from '../../monitor/tensorboard.ts';
import { maskedCrc32c } from '../../monitor/tfrecord.ts';
import { crc32c, mask, readEventFile, readRunEvents, readTfRecords, scalarSeries, seriesOfMetrics } from './tfevents-reader.ts';

const GOLDEN = new URL('../fixtures/tensorboard/events.out.tfevents.1024.golden', import.meta.url).pathname;
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'gsteer-tb-'));
  dirs.push(d);
  return d;
};
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const eventFiles = (dir: string) => readdirSync(dir).filter((n) => n.includes('tfevents'));

describe('CRC32C and the TFRecord mask (reader side, worked from published values)', () => {
  it('matches the RFC 3720 B.4 / iSCSI check values', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283); // the CRC-32C "check" value
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // 32 bytes of 0x00
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43); // 32 bytes of 0xff
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e); // 0x00..0x1f
  });

  it('masks by hand: 0xe3069283 -> 0xc78ab0e5', () => {
    // crc >>> 15            = 0x0001c60d
    // (crc << 17) mod 2^32  = (0xe3069283 & 0x7fff = 0x1283) << 17 = 0x25060000
    // rotated               = 0x2507c60d;  + 0xa282ead8 = 0xc78ab0e5 (no carry out of 32 bits)
    expect(mask(0xe3069283)).toBe(0xc78ab0e5);
  });

  it("the writer's masked CRC (@aws-crypto/crc32c) agrees with the table-driven one on any bytes", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (b) => maskedCrc32c(b) === mask(crc32c(b))));
  });
});

describe('golden event file (tests/fixtures/tensorboard, bytes worked by hand)', () => {
  // Record 1, 24 bytes: Event{wall_time 1024.0, file_version "brain.Event:2"}
  //   09 | 00 00 00 00 00 00 90 40   field 1 (wall_time), wire 1 (fixed64): 1024 = 2^10 -> exponent 1023+10 = 0x409, mantissa 0 -> 0x4090000000000000 LE
  //   1a 0d | "brain.Event:2"         field 3 (file_version), wire 2: (3 << 3) | 2 = 0x1a, 13 bytes
  // Record 2, 41 bytes: Event{wall_time 1536.0, step 1, summary{value [{reward, 0.5}, {loss, -2}]}}
  //   09 | 00 00 00 00 00 00 98 40   1536 = 1.5 * 2^10 -> mantissa top bit set -> 0x4098000000000000
  //   10 01                          field 2 (step), varint 1
  //   2a 1c                          field 5 (summary), wire 2: (5 << 3) | 2 = 0x2a, 28 bytes:
  //     0a 0d | 0a 06 "reward" 15 00 00 00 3f    Summary.value (field 1), 13 bytes: tag (field 1), simple_value
  //                                              (field 2, wire 5: (2 << 3) | 5 = 0x15), float32 0.5 = 0x3f000000 LE
  //     0a 0b | 0a 04 "loss" 15 00 00 00 c0      11 bytes; float32 -2 = sign 1, exponent 128 -> 0xc0000000
  const ascii = (s: string) => Buffer.from(s).toString('hex');
  const R1 = '09' + '0000000000009040' + '1a0d' + ascii('brain.Event:2');
  const R2 =
    '09' + '0000000000009840' + '1001' + '2a1c' + '0a0d' + '0a06' + ascii('reward') + '15' + '0000003f' + '0a0b' + '0a04' + ascii('loss') + '15' + '000000c0';
  const golden = readFileSync(GOLDEN);

  it('has the hand-worked framing: u64 length, masked CRC of it, data, masked CRC of the data', () => {
    expect(golden.length).toBe(16 + 24 + 16 + 41); // 97
    expect(golden.subarray(0, 8).toString('hex')).toBe('1800000000000000'); // 24, little-endian u64
    expect(golden.subarray(12, 36).toString('hex')).toBe(R1);
    expect(golden.subarray(40, 48).toString('hex')).toBe('2900000000000000'); // 41
    expect(golden.subarray(52, 93).toString('hex')).toBe(R2);
    // The four CRCs as the table-driven reader computes them (a bitwise CRC-32C gave the same).
    expect([golden.readUInt32LE(8), golden.readUInt32LE(36), golden.readUInt32LE(48), golden.readUInt32LE(93)]).toEqual([
      mask(crc32c(golden.subarray(0, 8))),
      mask(crc32c(golden.subarray(12, 36))),
      mask(crc32c(golden.subarray(40, 48))),
      mask(crc32c(golden.subarray(52, 93))),
    ]);
    expect([golden.readUInt32LE(8), golden.readUInt32LE(36), golden.readUInt32LE(48), golden.readUInt32LE(93)]).toEqual([
      0x224b7fa3, 0x3bab58e3, 0x005fff37, 0xe48aa20d,
    ]);
  });

  it('decodes with the independent reader', () => {
    expect(readEventFile(golden)).toEqual([
      { wallTime: 1024, step: 0, fileVersion: 'brain.Event:2', values: [] },
      {
        wallTime: 1536,
        step: 1,
        values: [
          { tag: 'reward', simpleValue: 0.5 },
          { tag: 'loss', simpleValue: -2 },
        ],
      },
    ]);
  });

  it('is byte for byte what the writer produces for the same events', () => {
    expect(FILE_VERSION).toBe('brain.Event:2');
    expect(Buffer.concat([versionEvent(1024), scalarEvent({ step: 1, reward: 0.5, loss: -2 }, 1536)]).equals(golden)).toBe(true);
  });

  it('a flipped byte or a cut file is refused by the reader', () => {
    const bad = Buffer.from(golden);
    bad[60] = (bad[60] as number) ^ 1;
    expect(() => readTfRecords(bad)).toThrow(/bad data CRC at byte 40/);
    expect(() => readTfRecords(golden.subarray(0, 90))).toThrow(/truncated record at byte 40/);
  });
});

describe('the run sink writes exactly metrics.jsonl as TensorBoard scalars', () => {
  const rec = (step: number, k: number): MetricsRecord => ({
    step,
    reward: k / 3,
    reward_std: 0.1 * k,
    'rewards/coverage/mean': 1e-7 * k,
    loss: -k * 1234.5678,
    policy_version: step,
    note: 'strings are no scalars',
  });

  it('one event per update, every numeric key a tag, float32 values, step = the record step', async () => {
    const dir = tmp();
    const file = join(dir, 'metrics.jsonl');
    const sink = metricsSink(file, null, 'unused');
    for (let s = 1; s <= 4; s++) await sink.write(rec(s, s));
    const events = readRunEvents(dir);
    expect(events[0]).toMatchObject({ fileVersion: 'brain.Event:2', values: [] });
    expect(events.slice(1).map((e) => e.step)).toEqual([1, 2, 3, 4]);
    expect(scalarSeries(events)).toEqual(seriesOfMetrics(readMetrics(file)));
    expect([...scalarSeries(events).keys()].sort()).toEqual(['loss', 'policy_version', 'reward', 'reward_std', 'rewards/coverage/mean']);
    // wall_time is Unix seconds at the write, non-decreasing
    const walls = events.map((e) => e.wallTime);
    expect(walls.every((w, i) => w > 1.6e9 && (i === 0 || w >= (walls[i - 1] as number)))).toBe(true);
  });

  it('any records: the reader gives back Math.fround of every numeric value', async () => {
    const value = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constant('x'));
    const record = fc.dictionary(fc.constantFrom('reward', 'loss', 'a/b', 'clip_ratio/low_mean', 'é'), value);
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 6 }), async (rs) => {
        const dir = tmp();
        const sink = metricsSink(join(dir, 'metrics.jsonl'), null, 'unused');
        for (const [i, r] of rs.entries()) await sink.write({ ...r, step: i + 1 });
        expect(scalarSeries(readRunEvents(dir))).toEqual(seriesOfMetrics(readMetrics(join(dir, 'metrics.jsonl'))));
      }),
      { numRuns: 25 },
    );
  });
});

describe('resume: truncate metrics.jsonl to the checkpoint, re-run the later updates', () => {
  it('the event file holds the kept records plus the re-run ones, one point per step', async () => {
    const dir = tmp();
    const file = join(dir, 'metrics.jsonl');
    const first = metricsSink(file, null, 'unused');
    for (let s = 1; s <= 5; s++) await first.write({ step: s, reward: s, loss: -s });
    appendFileSync(join(dir, eventFiles(dir)[0] as string), Buffer.from([0x07, 0, 0])); // a torn append (crash)
    truncateLines(file, 3); // restore.ts: checkpoint at step 3
    const resumed = metricsSink(file, null, 'unused');
    for (let s = 4; s <= 6; s++) await resumed.write({ step: s, reward: 10 * s, loss: -10 * s }); // re-run values differ
    const series = scalarSeries(readRunEvents(dir));
    expect(series.get('reward')).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 40],
      [5, 50],
      [6, 60],
    ]);
    expect(series).toEqual(seriesOfMetrics(readMetrics(file)));
  });

  it('a rewrite keeps when each kept point was written, and its file name sorts after the old one', () => {
    const dir = tmp();
    const t0 = 1_700_000_000_000;
    let t = t0;
    const w1 = openEventWriter(dir, [], () => t);
    w1.append({ step: 1, reward: 1 });
    t += 5000;
    w1.append({ step: 2, reward: 2 });
    t = t0; // the clock reads the second w1's file is named after
    const w2 = openEventWriter(
      dir,
      [
        { step: 1, reward: 1 },
        { step: 2, reward: 2 },
      ],
      () => t,
    );
    expect(w1.file).toMatch(/tfevents\.1700000000\./);
    expect(w2.file).toMatch(/tfevents\.1700000001\./);
    // version event at the rewrite, then the points at their first writes
    expect(readRunEvents(dir).map((e) => e.wallTime)).toEqual([1_700_000_000, 1_700_000_000, 1_700_000_005]);
  });

  it('a crash between removing the old file and renaming the new one: the next open recovers from the rebuild', () => {
    const dir = tmp();
    const t = 1_700_000_000_000;
    const w1 = openEventWriter(dir, [], () => t);
    w1.append({ step: 1, reward: 1 });
    const f = w1.file;
    writeFileSync(join(dir, '.tensorboard-rebuild'), readFileSync(f)); // the built file, fsynced ...
    rmSync(f); // ... and the old one removed, then the crash
    openEventWriter(dir, [{ step: 1, reward: 1 }], () => t + 60_000);
    expect(readdirSync(dir).filter((n) => n.startsWith('.tensorboard'))).toEqual([]);
    expect(readRunEvents(dir).slice(1)).toEqual([{ wallTime: 1_700_000_000, step: 1, values: [{ tag: 'reward', simpleValue: 1 }] }]);
  });
});
