// Crash-safe writes: temp file -> fsync -> rename -> fsync the directory. A directory is
// built under a temp name and renamed whole, so a reader sees all of it or none of it.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic there.
  }
}

const tmpSuffix = () => `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;

/**
 * durable: false skips the fsyncs (still temp + rename, so a reader sees the whole file or
 * none of it), for files a later fsynced checkpoint supersedes (workers/run-file.ts).
 */
export interface AtomicOptions {
  durable?: boolean;
}

export function writeFileAtomic(path: string, data: string | Uint8Array, { durable = true }: AtomicOptions = {}): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = path + tmpSuffix();
  const fd = openSync(tmp, 'w');
  try {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  if (durable) fsyncDir(dirname(path));
}

/** Build a directory with `fill(tmpDir)` and rename it to `dir` (replacing an older one). */
export async function writeDirAtomic(dir: string, fill: (tmpDir: string) => Promise<void> | void, { durable = true }: AtomicOptions = {}): Promise<void> {
  mkdirSync(dirname(dir), { recursive: true });
  const tmp = dir + tmpSuffix();
  mkdirSync(tmp);
  try {
    await fill(tmp);
    if (durable) fsyncDir(tmp);
    if (existsSync(dir)) {
      const old = dir + tmpSuffix();
      renameSync(dir, old);
      renameSync(tmp, dir);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmp, dir);
    }
    if (durable) fsyncDir(dirname(dir));
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Leftovers of a crash mid-write (`name.tmp-PID-xxxx`), safe to delete on start. */
export const isTempName = (name: string) => /\.tmp-\d+-[0-9a-f]{8}$/.test(name);

/**
 * writeFileAtomic without blocking the event loop (rollout workers run several episodes
 * at once; a synchronous fsync would stall all of them).
 */
export async function writeFileAtomicAsync(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = path + tmpSuffix();
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}
