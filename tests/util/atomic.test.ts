// util/atomic.ts: the one temp + rename (+ fsync) writer. A reader sees the old file or the
// whole new one; an aborted or failed write leaves neither a partial file nor a temp file.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyFileSynced, openAtomicWriter, writeFileAtomic, writeFileAtomicAsync } from '../../util/atomic.ts';

const dirs: string[] = [];
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), 'gsteer-atomic-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('atomic writes', () => {
  it('a streamed file appears only on commit, whole; the old one stays until then', () => {
    const dir = fresh();
    const path = join(dir, 'sub', 'data.jsonl');
    writeFileAtomic(path, 'old\n');
    const w = openAtomicWriter(path);
    w.write('a\n');
    w.write(Buffer.from('b\n'));
    expect(readFileSync(path, 'utf8')).toBe('old\n');
    expect(readdirSync(join(dir, 'sub'))).toHaveLength(2); // data.jsonl + its temp file
    w.commit();
    expect(readFileSync(path, 'utf8')).toBe('a\nb\n');
    expect(readdirSync(join(dir, 'sub'))).toEqual(['data.jsonl']);
  });

  it('abort leaves the old file and no temp file', () => {
    const dir = fresh();
    const path = join(dir, 'x.bin');
    writeFileAtomic(path, new Uint8Array([1, 2, 3]), { durable: false });
    const w = openAtomicWriter(path);
    w.write('partial');
    w.abort();
    expect([...readFileSync(path)]).toEqual([1, 2, 3]);
    expect(readdirSync(dir)).toEqual(['x.bin']);
  });

  it('the async writer and the synced copy give the same bytes', async () => {
    const dir = fresh();
    await writeFileAtomicAsync(join(dir, 'a', 'f.json'), '{"k":1}\n');
    writeFileSync(join(dir, 'src'), 'payload');
    copyFileSynced(join(dir, 'src'), join(dir, 'dst'));
    expect(readFileSync(join(dir, 'a', 'f.json'), 'utf8')).toBe('{"k":1}\n');
    expect(readFileSync(join(dir, 'dst'), 'utf8')).toBe('payload');
    expect(readdirSync(join(dir, 'a'))).toEqual(['f.json']);
    expect(existsSync(join(dir, 'src'))).toBe(true);
  });
});
