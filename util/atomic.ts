// Crash-safe writes: temp file -> fsync -> rename -> fsync the directory. A directory is
// built under a temp name and renamed whole, so a reader sees all of it or none of it. Any
// failure (ENOSPC while writing, fsyncing or renaming included) removes the temp file or
// folder before it is thrown. Replacing a directory keeps a whole copy on disk at every
// moment: the old one is moved to `<dir>.replaced` (a fixed name) before the new one takes
// its place, and recoverReplaced() puts it back if a crash fell between the two renames.
// Temp names are `<name>.tmp-<pid>-<hex>`: removeStrayTemps() sweeps those a killed process left.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isRunning } from './pid.ts';

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
const TMP_NAME = /\.tmp-(\d+)-[0-9a-f]{8}$/;
/** Where writeDirAtomic keeps the old copy of a directory while the new one takes its place. */
export const replacedName = (dir: string) => `${dir}.replaced`;

/** A dir whose replacement a crash interrupted: put the old copy back (or drop it once the new one is in place). */
export function recoverReplaced(dir: string): void {
  const old = replacedName(dir);
  if (!existsSync(old)) return;
  if (existsSync(dir)) rmSync(old, { recursive: true, force: true });
  else renameSync(old, dir);
}

/** recoverReplaced for every `*.replaced` entry of `parent` (checkpoints/, adapters/). */
export function recoverReplacedIn(parent: string): void {
  if (!existsSync(parent)) return;
  for (const name of readdirSync(parent)) if (name.endsWith('.replaced')) recoverReplaced(join(parent, name.slice(0, -'.replaced'.length)));
}

/**
 * Remove the temp files and folders (`*.tmp-<pid>-<hex>`) under `dir` whose writer is no
 * longer running (this host's pids; another live process's are left alone). Returns them.
 */
export function removeStrayTemps(dir: string, recursive = true): string[] {
  const removed: string[] = [];
  if (!existsSync(dir)) return removed;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    const m = TMP_NAME.exec(e.name);
    if (m && (Number(m[1]) === process.pid ? false : !isRunning(Number(m[1])))) {
      rmSync(p, { recursive: true, force: true });
      removed.push(p);
    } else if (recursive && e.isDirectory()) removed.push(...removeStrayTemps(p, true));
  }
  return removed;
}

/**
 * durable: false skips the fsyncs (still temp + rename, so a reader sees the whole file or
 * none of it), for files a later fsynced checkpoint supersedes (util/run-file.ts).
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
  /** fsync and close, not rename: the temp file's path, for a caller that publishes several files as one set. */
  stage(): string;
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
        try {
          if (durable) fsyncSync(fd);
        } finally {
          close();
        }
        renameSync(tmp, path);
      } catch (e) {
        rmSync(tmp, { force: true }); // ENOSPC at fsync, EXDEV at rename ...: no temp file left behind
        throw e;
      }
      if (durable) fsyncDir(dirname(path));
    },
    stage() {
      try {
        try {
          if (durable) fsyncSync(fd);
        } finally {
          close();
        }
      } catch (e) {
        rmSync(tmp, { force: true });
        throw e;
      }
      return tmp;
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

/**
 * Build a directory with `fill(tmpDir)` and rename it to `dir`. An older `dir` is moved to
 * `<dir>.replaced` first and removed once the new one is in place: at every moment one whole
 * copy is on disk, under `dir` or `<dir>.replaced` (recoverReplaced).
 */
export async function writeDirAtomic(dir: string, fill: (tmpDir: string) => Promise<void> | void, { durable = true }: AtomicOptions = {}): Promise<void> {
  mkdirSync(dirname(dir), { recursive: true });
  recoverReplaced(dir);
  const tmp = dir + tmpSuffix();
  mkdirSync(tmp);
  try {
    await fill(tmp);
    if (durable) fsyncDir(tmp);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  const old = replacedName(dir);
  try {
    if (existsSync(dir)) renameSync(dir, old);
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    recoverReplaced(dir);
    throw e;
  }
  if (durable) fsyncDir(dirname(dir));
  rmSync(old, { recursive: true, force: true });
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
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true }); // ENOSPC mid-write: no partial temp file left behind
    throw e;
  }
  const dir = await open(dirname(path), 'r').catch(() => null); // as fsyncDir, without blocking
  if (dir)
    await dir
      .sync()
      .catch(() => undefined)
      .finally(() => dir.close());
}
