// util/optional.ts: an absent optional package is null; anything else that fails is thrown.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importOptional } from '../../util/optional.ts';

describe('importOptional', () => {
  it('returns the module of an installed package', async () => {
    const yaml = await importOptional<typeof import('yaml')>('yaml');
    expect(yaml?.stringify({ a: 1 })).toBe('a: 1\n');
  });

  it('returns null for a package that is not installed', async () => {
    expect(await importOptional('gsteer-no-such-package')).toBeNull();
  });

  it('throws when the module is there but something it imports is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gsteer-optional-'));
    try {
      const entry = join(dir, 'index.mjs');
      writeFileSync(entry, "import 'gsteer-absent-inner-dependency';\n");
      await expect(importOptional(entry)).rejects.toThrow(/gsteer-absent-inner-dependency/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
