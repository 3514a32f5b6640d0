// Per-update files of the run directory (trajectories, group files, the user-state dump of
// each step): temp file + rename, so a reader sees the whole file or none of it and a worker
// killed mid-write leaves only a temp file (BullMQ retries the job, which writes it again).
// Not fsynced: these files only matter until the next checkpoint, which copies what it needs
// and is fsynced itself (util/atomic.ts); a machine crash may lose the newest of them,
// and `gsteer resume` removes every per-update file after its checkpoint and rewrites them
// (checkpoints/restore.ts). An fsync costs 4-8 ms per file on the build machine's disk.
// Every run file passes the masking rule first (util/secrets.ts): an error message a server
// echoed a key into never lands in a group file the dashboard serves.
import { writeDirAtomic, writeFileAtomic, writeFileAtomicAsync } from './atomic.ts';
import { maskValues } from './secrets.ts';

/** `durable`: orchestrator.fsyncRunFiles (default false). */
export async function writeRunFile(path: string, raw: string, durable: boolean): Promise<void> {
  const data = maskValues(raw);
  if (durable) return writeFileAtomicAsync(path, data);
  // Synchronous on purpose: without the fsync, writing a few kB takes tens of µs, less than
  // the event-loop round trips of the five promise-based calls (mkdir, open, write, close,
  // rename), which a loaded machine stretches to milliseconds each.
  writeFileAtomic(path, data, { durable: false });
}

/**
 * An adapter version dir (adapters/policy-vN): built under a temp name, renamed whole (a
 * reader sees all of it or none), not fsynced, for the same reason: a checkpoint copies the
 * versions it needs, and resume restores adapters/ from the checkpoint.
 */
export function writeRunDir(dir: string, fill: (tmpDir: string) => Promise<void>, durable: boolean): Promise<void> {
  return writeDirAtomic(dir, fill, { durable });
}
