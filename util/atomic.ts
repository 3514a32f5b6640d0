// Crash-safe writes: temp file -> fsync -> rename -> fsync the directory. A directory is
// built under a temp name and renamed whole, so a reader sees all of it or none of it.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
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

/**
 * A file written in pieces, then published whole: chunks go to a temp file beside `path`;
 * commit() fsyncs it (durable), renames it to `path` and fsyncs the directory; abort()
 * removes it. The one temp + rename + fsync sequence every writer of gsteer goes through.
 */
export interface AtomicWriter {
  write(chunk: string | Uint8Array): void;
  commit(): void;
  abort(): void;
}

export function openAtomicWriter(path: string, { durable = true }: AtomicOptions = {}): AtomicWriter {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = path + tmpSuffix();
  const fd = openSync(tmp, 'w');
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  return {
    write(chunk) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      let off = 0;
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    },
    commit() {
      try {
        if (durable) fsyncSync(fd);
      } finally {
        close();
      }
      renameSync(tmp, path);
      if (durable) fsyncDir(dirname(path));
    },
    abort() {
      close();
      rmSync(tmp, { force: true });
    },
  };
}

export function writeFileAtomic(path: string, data: string | Uint8Array, opts: AtomicOptions = {}): void {
  const w = openAtomicWriter(path, opts);
  try {
    w.write(data);
  } catch (e) {
    w.abort();
    throw e;
  }
  w.commit();
}

/**
 * Copy a file and fsync the copy (checkpoint and model folders built under a temp name:
 * writeDirAtomic fsyncs the folder, this the contents).
 */
export function copyFileSynced(src: string, dst: string): void {
  copyFileSync(src, dst);
  const fd = openSync(dst, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
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
  const dir = await open(dirname(path), 'r').catch(() => null); // as fsyncDir, without blocking
  if (dir) await dir.sync().catch(() => undefined).finally(() => dir.close());
}
