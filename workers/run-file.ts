// Per-update files of the run directory (trajectories, group files, the user-state dump of
// each step): temp file + rename, so a reader sees the whole file or none of it and a worker
// killed mid-write leaves only a temp file (BullMQ retries the job, which writes it again).
// Not fsynced: these files only matter until the next checkpoint, which copies what it needs
// and is fsynced itself (checkpoints/atomic.ts); a machine crash may lose the newest of them,
// and `gsteer resume` removes every per-update file after its checkpoint and rewrites them
// (checkpoints/restore.ts). An fsync costs ~4 ms per file on this machine's disk.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomicAsync } from '../checkpoints/atomic.ts';
import { shortcutOn } from './orch-options.ts';

export async function writeRunFile(path: string, data: string): Promise<void> {
  if (!shortcutOn('fsync')) return writeFileAtomicAsync(path, data);
  await mkdir(dirname(path), { recursive: true });
  // Same temp-name shape as checkpoints/atomic.ts, so isTempName recognises crash leftovers.
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}
