// Disk full (issue 32 item 6): an atomic write that fails with ENOSPC, while writing, at the
// fsync or at the rename, leaves no temp file behind and the old file as it was. The writer's
// fs calls are injected to fail (vi.mock of node:fs, so this runs anywhere); the tmpfs e2e
// (tests/e2e/disk-full.test.ts) fills a real filesystem. Checked to fail without the cleanup.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

/** Which fs call fails next with ENOSPC (null: none). */
const fail: { sync: null | 'writeSync' | 'fsyncSync' | 'renameSync'; async: null | 'writeFile' | 'sync' | 'rename' } = { sync: null, async: null };
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });

vi.mock('node:fs', async (orig) => {
  const fs = await orig<typeof import('node:fs')>();
  const wrap = <K extends 'writeSync' | 'fsyncSync' | 'renameSync'>(k: K) =>
    ((...a: unknown[]) => {
      if (fail.sync === k) throw enospc();
      return (fs[k] as (...x: unknown[]) => unknown)(...a);
    }) as (typeof fs)[K];
  return { ...fs, default: fs, writeSync: wrap('writeSync'), fsyncSync: wrap('fsyncSync'), renameSync: wrap('renameSync') };
});
vi.mock('node:fs/promises', async (orig) => {
  const fsp = await orig<typeof import('node:fs/promises')>();
  return {
    ...fsp,
    default: fsp,
    rename: async (...a: Parameters<typeof fsp.rename>) => {
      if (fail.async === 'rename') throw enospc();
      return fsp.rename(...a);
    },
    open: async (...a: Parameters<typeof fsp.open>) => {
      const fh = await fsp.open(...a);
      return new Proxy(fh, {
        get(t, k) {
          if (k === 'writeFile' && fail.async === 'writeFile')
            return async () => {
              await t.write('half a file');
              throw enospc();
            };
          if (k === 'sync' && fail.async === 'sync')
            return async () => {
              throw enospc();
            };
          const v = Reflect.get(t, k);
          return typeof v === 'function' ? v.bind(t) : v;
        },
      });
    },
  };
});

const { writeFileAtomic, writeFileAtomicAsync, writeDirAtomic } = await import('../../util/atomic.ts');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gsteer-enospc-'));
  writeFileSync(join(dir, 'f.json'), 'old');
});
afterEach(() => {
  fail.sync = null;
  fail.async = null;
  rmSync(dir, { recursive: true, force: true });
});

describe('atomic writes on a full disk', () => {
  it.each(['writeSync', 'fsyncSync', 'renameSync'] as const)('writeFileAtomic failing at %s: ENOSPC thrown, no temp file, old content kept', (at) => {
    fail.sync = at;
    expect(() => writeFileAtomic(join(dir, 'f.json'), 'new content')).toThrow(/ENOSPC/);
    fail.sync = null;
    expect(readdirSync(dir)).toEqual(['f.json']);
    expect(readFileSync(join(dir, 'f.json'), 'utf8')).toBe('old');
  });

  it.each(['writeFile', 'sync', 'rename'] as const)('writeFileAtomicAsync failing at %s: ENOSPC thrown, no temp file, old content kept', async (at) => {
    fail.async = at;
    await expect(writeFileAtomicAsync(join(dir, 'f.json'), 'new content')).rejects.toThrow(/ENOSPC/);
    fail.async = null;
    expect(readdirSync(dir)).toEqual(['f.json']);
    expect(readFileSync(join(dir, 'f.json'), 'utf8')).toBe('old');
  });

  it('writeDirAtomic failing inside (a file of the new copy) or at the swap: no temp folder, the old copy whole', async () => {
    const d = join(dir, 'adapter');
    await writeDirAtomic(d, (t) => writeFileAtomic(join(t, 'w'), 'v1'));
    fail.sync = 'writeSync';
    await expect(writeDirAtomic(d, (t) => writeFileAtomic(join(t, 'w'), 'v2'))).rejects.toThrow(/ENOSPC/);
    fail.sync = null;
    expect(readdirSync(dir).sort()).toEqual(['adapter', 'f.json']);
    expect(readFileSync(join(d, 'w'), 'utf8')).toBe('v1');
    let renames = 0;
    await expect(
      writeDirAtomic(d, (t) => {
        writeFileAtomic(join(t, 'w'), 'v3');
        fail.sync = 'renameSync'; // the swap itself fails
        renames++;
      }),
    ).rejects.toThrow(/ENOSPC/);
    fail.sync = null;
    expect(renames).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(['adapter', 'f.json']);
    expect(readFileSync(join(d, 'w'), 'utf8')).toBe('v1');
  });
});
